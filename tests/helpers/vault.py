"""Vaults as the tests build and read them: notes, copies of the sample vaults, a snapshot of
every file, the graph file a resync wrote, and whether the scores in the notes are current."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Sequence
from pathlib import Path

from aclarai.daemon.config import WatchSettings
from aclarai.daemon.loop.watcher import VaultWatcher
from aclarai.daemon.vault.notes import Vault
from aclarai.graph import block_key, block_scores
from aclarai.graph.sqlite import SqliteStore
from aclarai.parsers import CommentKind, format_id_comment, parse_note, scan_line
from tests.helpers.cli import QUIET_S


def note_text(blocks: Sequence[tuple[str, str]], *, title: str = "Standup") -> str:
    """A Tier 1 note: one ``speaker: text`` utterance per block, id comment and anchor after."""
    header = f"<!-- aclarai:title={title} -->\n\n"
    body = "".join(f"{text}\n<!-- aclarai:id={bid} ver=1 -->\n^{bid}\n\n" for bid, text in blocks)
    return header + body


def user_bytes(text: str) -> str:
    """A note without what the daemon owns: score comment lines dropped, id comments written
    with version 0 (the daemon bumps ``ver``)."""
    kept = []
    for line in text.splitlines(keepends=True):
        comments = scan_line(line).comments
        if (
            len(comments) == 1
            and comments[0].kind is CommentKind.SCORE
            and (line[: comments[0].start] + line[comments[0].end :]).strip() == ""
        ):
            continue
        for c in reversed([c for c in comments if c.kind is CommentKind.ID]):
            line = line[: c.start] + format_id_comment(str(c.value), 0) + line[c.end :]
        kept.append(line)
    return "".join(kept)


SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


def state_dir() -> Path:
    return Path(os.environ["ACLARAI_STATE_DIR"])


def open_store() -> SqliteStore:
    return SqliteStore(state_dir() / "graph.sqlite")


def score_problems(vault: Path, store: SqliteStore) -> list[str]:
    """Why the vault's scores are not current (empty when every block is in step).

    Current: the store holds each block with the note's hash, every claim of the block was
    evaluated against that hash, and the note's score comments say the block's values.
    """
    problems: list[str] = []
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in rel.split("/")) or not path.is_file():
            continue
        try:
            blocks = parse_note(path.read_text(encoding="utf-8")).blocks
        except (UnicodeDecodeError, OSError):
            continue
        keys = {b.id: block_key(rel, b.id) for b in blocks}
        stored = store.get_blocks(keys.values())
        claims = store.claims_of_blocks(keys.values())
        for block in blocks:
            old = stored.get(keys[block.id])
            if old is None or old.hash != block.hash or old.file != rel or old.deleted_at:
                problems.append(f"{rel}:{block.id}: store not in step ({old})")
                continue
            stale = [
                c.id
                for c in claims[keys[block.id]]
                if c.score is None or c.score.evaluated_hash != block.hash
            ]
            if stale:
                problems.append(f"{rel}:{block.id}: claims not evaluated for this text: {stale}")
                continue
            want = {
                k: round(v, 2)
                for k, v in block_scores(claims[keys[block.id]]).items()
                if v is not None
            }
            have = {k: round(v, 2) for k, v in block.scores.items()}
            if want != have:
                problems.append(f"{rel}:{block.id}: note says {have}, graph says {want}")
    return problems


SENTENCES = [
    "alice: The deploy to staging failed twice on Tuesday.",
    "bob: I rolled back to v2.3 and it is stable now.",
    "carol: It broke there again after that.",
    "dana: The database migration took 40 minutes on Friday.",
    "erin: Maybe we should look at the cache again?",
]


def generated_vault(root: Path, rng: random.Random, notes: int = 100, blocks: int = 10) -> None:
    for i in range(notes):
        items = [(f"blk-c{i}x{j}", rng.choice(SENTENCES)) for j in range(blocks)]
        path = root / f"folder{i % 5}" / f"note{i:03}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(items, title=f"Note {i}"), encoding="utf-8")


def start_watcher(tmp_path: Path, *, polling: bool) -> VaultWatcher:
    root = tmp_path / "vault"
    root.mkdir()
    known: list[str] = []
    options = WatchSettings(quiet_period_s=QUIET_S, polling=polling, polling_interval_s=0.1)
    w = VaultWatcher(
        Vault(root),
        options,
        known_notes=lambda prefix: [k for k in known if k.startswith(prefix)],
    )
    w.known = known  # type: ignore[attr-defined]
    w.start()
    return w


KEPANO = SAMPLE_VAULT.parent / "tests" / "data" / "vaults" / "kepano-obsidian"
"""A copy of a real Obsidian vault of ordinary notes (kepano's)."""
ACLARAI_FOLDERS = (".aclarai/", "aclarai/")
"""aclarai's own folders in a vault: its state (the lock, the import archive) and what it writes
for the user to read (the dashboard, the inbox)."""
DASHBOARD = "aclarai/Dashboard.md"
"""Written by resync and the daemon; not a note."""
DASHBOARD_STAMP = "Written by aclarai at "
"""Starts the dashboard's line that says when it was written."""
_DASH, _SPACE = "(?:-|\u2011)", "(?: |\u00a0)"
DASHBOARD_TIMES = re.compile(
    (
        f"^{DASHBOARD_STAMP}.*$|\\d{{4}}{_DASH}\\d\\d{_DASH}\\d\\d{_SPACE}\\d\\d:\\d\\d{_SPACE}UTC"
    ).encode(),
    re.MULTILINE,
)
"""When the dashboard was written, and when each note was last evaluated (to the minute): the
bytes two runs a minute apart may write differently."""


def vault_snapshot(
    root: Path,
    *,
    dashboard: bool = True,
    skip: tuple[str, ...] = (),
    pattern: str = "*",
    mask_times: bool = True,
) -> dict[str, bytes]:
    """Every file under ``root`` whose name matches ``pattern`` (``"*.md"``: the notes), by
    relative path, but those under the folders ``skip`` (``".aclarai/"``: the lock, the import
    archive); the dashboard with its times masked (its bytes as they are when not
    ``mask_times``), or left out when not ``dashboard``."""
    files = {
        rel: path.read_bytes()
        for path in sorted(root.rglob(pattern))
        if path.is_file() and not (rel := path.relative_to(root).as_posix()).startswith(skip)
    }
    if DASHBOARD in files:
        if dashboard:
            if mask_times:
                files[DASHBOARD] = DASHBOARD_TIMES.sub(b"<time>", files[DASHBOARD])
        else:
            del files[DASHBOARD]
    return files


def dashboard_times(root: Path) -> list[bytes]:
    """The times :func:`vault_snapshot` masks in the dashboard under ``root``, in order: the
    line that says when it was written (it starts with :data:`DASHBOARD_STAMP`) and when each
    note was last evaluated."""
    return DASHBOARD_TIMES.findall((root / DASHBOARD).read_bytes())


def dashboard_stamps(root: Path) -> int:
    """How many of the :func:`dashboard_times` under ``root`` say when it was written."""
    return sum(time.startswith(DASHBOARD_STAMP.encode()) for time in dashboard_times(root))


def user_files(root: Path) -> dict[str, bytes]:
    """The user's files: :func:`vault_snapshot` without the dashboard and aclarai's state."""
    return vault_snapshot(root, dashboard=False, skip=(".aclarai/",))
