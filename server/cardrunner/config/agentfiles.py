"""Where a project's instructions for agents are: AGENTS.md (or CLAUDE.md) and the write area's.

Two readers need the same list: a run, which reads them into its system prompt
(`run/instructions.py`), and the trust question, which lists them with their content before a
stranger's repository may tell the model anything (`trust/requests.py`). One function finds
them, so the files consented to are the files sent.
"""

from __future__ import annotations

import os
from pathlib import Path

NAME, FALLBACK = "AGENTS.md", "CLAUDE.md"
MAX_FILES = 32
"""Nested files read at most: a write area with hundreds of them is not a set of instructions."""
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "dist", "build", "target"})


def instruction_files(root: Path, write: list[str]) -> list[Path]:
    """The files to read: the root's AGENTS.md (else CLAUDE.md), then the write area's, nearest
    the root first; one more than `MAX_FILES` at most, so a caller can say it cut."""
    top = root / NAME if (root / NAME).exists() else root / FALLBACK
    found = [top] if top.exists() else []
    for folder in write:
        base = (root / folder).resolve()
        if not base.is_dir() or not base.is_relative_to(root.resolve()):
            continue
        for directory, subdirs, files in os.walk(base):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIP_DIRS)
            path = Path(directory) / NAME
            if NAME in files and path.resolve() != (root / NAME).resolve() and path not in found:
                found.append(path)
            if len(found) > MAX_FILES:
                return found[: MAX_FILES + 1]
    return found
