"""A small vault of ordinary notes in several styles and two scripts, for search tests."""

from __future__ import annotations

from pathlib import Path

NOTES = {
    "help/Pricing.md": (
        "---\naliases: [Plans]\n---\n# Pricing\n\n## Education discount\n\n"
        "Students and nonprofits get 40% off the annual plan.\n\n"
        "The monthly plan costs 8 dollars.\n"
    ),
    "help/Sync.md": (
        "# Sync\n\n## Storage limits\n\n"
        "When you reach your storage limit, the Sync plugin stops syncing files.\n\n"
        "> [!tip] Upgrade\n> A larger plan raises the limit to 100 GB.\n\n"
        "Version history is kept for twelve months.\n"
    ),
    "garden/Roses.md": (
        "# Roses\n\nPrune the climbing roses in late February.\n\n"
        "Aphids gather on the new shoots in May.\n"
    ),
    "garden/deep/Figs.md": "# Figs\n\nThe fig tree fruits twice a year in a warm summer.\n",
    "journal/2024-05-02.md": (
        "# Thursday\n\nThe boiler was serviced by Marta on Thursday morning.\n"
    ),
    "zh/潮汐.md": "# 潮汐\n\n潮汐观测站每天记录两次海面高度。\n",
}


def write_vault(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
