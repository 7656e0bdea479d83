"""Which repository a path belongs to: the folder every verb takes its settings from."""

from __future__ import annotations

from pathlib import Path


def find_root(start: Path) -> Path:
    """The workspace root: the nearest folder upwards with cardrunner.toml or .git."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        if (folder / "cardrunner.toml").is_file() or (folder / ".git").exists():
            return folder
    return start if start.is_dir() else start.parent
