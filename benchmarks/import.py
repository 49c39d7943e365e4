"""``aclarai import`` throughput on generated exports.

    python benchmarks/import.py [--conversations 2000] [--messages 50]

Writes a ChatGPT ``conversations.json`` of N conversations and a Slack workspace export (zip:
``users.json``, ``channels.json``, one day file per conversation) with the same number of
messages, then imports each into a fresh vault in its own process, so peak RSS is per format,
and once more into the same vault (nothing changes: the idempotent path). Prints messages/s
(wall clock, and per CPU second: the machine may be shared) and peak RSS. Target (2 cores):
>= 20,000 messages/s.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

WORDS = [
    "the",
    "deploy",
    "staging",
    "failed",
    "migration",
    "rollback",
    "cluster",
    "release",
    "test",
    "budget",
    "vendor",
    "quote",
    "alice",
    "bob",
    "carol",
    "dana",
    "latency",
    "p99",
    "seconds",
    "nodes",
    "region",
    "backup",
    "retention",
    "api",
    "billing",
]
T0 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 30))
    return " ".join(words).capitalize() + f" on day {rng.randint(1, 28)}."


def chatgpt_export(path: Path, conversations: int, messages: int, rng: random.Random) -> int:
    items = []
    for c in range(conversations):
        start = T0 + c * 3600
        mapping: dict[str, object] = {
            "root": {"id": "root", "message": None, "parent": None, "children": ["m0"]}
        }
        for m in range(messages):
            mapping[f"m{m}"] = {
                "id": f"m{m}",
                "parent": "root" if m == 0 else f"m{m - 1}",
                "children": [f"m{m + 1}"] if m + 1 < messages else [],
                "message": {
                    "id": f"c{c}-m{m}",
                    "author": {"role": "user" if m % 2 == 0 else "assistant", "name": None},
                    "create_time": start + m * 30,
                    "content": {"content_type": "text", "parts": [sentence(rng)]},
                    "metadata": {},
                },
            }
        items.append(
            {
                "title": f"Conversation {c}",
                "create_time": start,
                "mapping": mapping,
                "current_node": f"m{messages - 1}",
                "id": f"conv-{c}",
            }
        )
    path.write_text(json.dumps(items))
    return conversations * messages


def slack_export(path: Path, days: int, messages: int, rng: random.Random) -> int:
    users = [{"id": f"U{i:04d}", "name": f"user{i}", "real_name": f"User {i}"} for i in range(40)]
    channels = [{"id": f"C{i:03d}", "name": f"channel-{i}"} for i in range(20)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("users.json", json.dumps(users))
        archive.writestr("channels.json", json.dumps(channels))
        for d in range(days):
            channel = channels[d % len(channels)]["name"]
            day = datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=d // len(channels))
            base = day.timestamp() + 9 * 3600
            items = [
                {
                    "type": "message",
                    "user": f"U{rng.randrange(40):04d}",
                    "text": f"<@U{rng.randrange(40):04d}> {sentence(rng)}",
                    "ts": f"{base + m * 60:.0f}.{m:06d}",
                }
                for m in range(messages)
            ]
            archive.writestr(f"{channel}/{day.date().isoformat()}.json", json.dumps(items))
    return days * messages


def run_import(source: Path, vault: Path) -> dict[str, float]:
    from aclarai.daemon.intake.importer import import_sources

    started = time.perf_counter()
    cpu_started = time.process_time()
    report = import_sources([source], vault, "conversations/")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    assert not report.errors, report.errors
    return {
        "seconds": elapsed,
        "cpu_s": cpu,
        "messages": report.messages,
        "notes": report.created + report.extended + report.unchanged,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=50, help="messages per conversation")
    parser.add_argument("--run", nargs=2, metavar=("SOURCE", "VAULT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_import(Path(args.run[0]), Path(args.run[1]))))
        return
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = {
            "chatgpt": root / "conversations.json",
            "slack": root / "slack.zip",
        }
        total = chatgpt_export(sources["chatgpt"], args.conversations, args.messages, rng)
        slack_export(sources["slack"], args.conversations, args.messages, rng)
        for name, source in sources.items():
            vault = root / f"vault-{name}"
            vault.mkdir()
            size_mb = source.stat().st_size / 1e6
            for phase in ("first", "again"):
                out = subprocess.run(
                    [sys.executable, __file__, "--run", str(source), str(vault)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(out.stdout)
                rate = total / result["seconds"]
                print(
                    f"{name:8} {phase:6} {total} messages, {result['notes']:.0f} notes "
                    f"({size_mb:.0f} MB export): {result['seconds']:.2f} s, "
                    f"{rate:,.0f} messages/s ({total / result['cpu_s']:,.0f} per CPU s), "
                    f"peak RSS {result['rss_mb']:.0f} MB"
                )


if __name__ == "__main__":
    main()
