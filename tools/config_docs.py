"""Write the configuration's generated files from its models (``make config-docs``).

``aclarai.config.default.yaml`` and ``docs/configuration.md`` come from the attribute docstrings
and defaults in ``daemon/config/``; ``--check`` only says whether they are current (exit 1 if
not), as tests/daemon/test_config_docs.py does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aclarai.daemon.config.docs import configuration_page, default_yaml

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    ROOT / "aclarai.config.default.yaml": default_yaml,
    ROOT / "docs" / "configuration.md": configuration_page,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args()
    stale = []
    for path, render in TARGETS.items():
        text = render()
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for rel in stale:
        print(f"{rel}: {'stale' if args.check else 'written'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
