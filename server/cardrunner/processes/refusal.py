"""What a sandbox refusal in a command's output means, and how to fix the settings for it.

A build that meets the sandbox fails with `Read-only file system` (EROFS) somewhere in its
output — Python's `[Errno 30] Read-only file system: '/repo/.pytest_cache'`, Node's
`EROFS: read-only file system, mkdir '/repo/dist'`, cargo's `Read-only file system (os error 30)
at path "/repo/target…"` — and an exit status that says nothing. `cardrunner check --try` and a
run's baseline name the path and the setting that would let the build write there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cardrunner.processes.sandbox import DEPENDENCY_DIRS, PROTECTED

_EROFS_RE = re.compile(r"read-only file system|\bEROFS\b|os error 30|errno 30", re.IGNORECASE)
_QUOTED_RE = re.compile(r"""['"`‘“](/[^'"`’”\n]*)['"`’”]""")
_BARE_RE = re.compile(r"""(?:^|[\s:=])(/[^\s'"`,;]+)""")
_LOOK_BACK = 3
"""cargo names the path on the line before its `Caused by: Read-only file system`."""


@dataclass(frozen=True)
class Refusal:
    """One write the sandbox refused: where, and what to change."""

    path: str
    fix: str

    def __str__(self) -> str:
        return f"the sandbox refused a write to {self.path} (read-only file system): {self.fix}"


def _fix(path: str, root: Path) -> str:
    resolved = Path(os.path.abspath(path))
    if not resolved.is_relative_to(root):
        return (
            "it lies outside the work tree; if it is a toolchain's cache, add its folder to "
            "`build_write` under [sandbox] in cardrunner.toml"
        )
    rel = resolved.relative_to(root)
    top = rel.parts[0] if rel.parts else "."
    if top in PROTECTED:
        return f"{top} belongs to git or cardrunner and stays read-only; make the build write elsewhere"
    if top in DEPENDENCY_DIRS:
        return (
            f"{top} is the checkout's, shown read-only in the run's worktree; make the tool "
            "write its cache elsewhere, or set isolation = false"
        )
    return f"{top} is read-only to builds here; make the build write elsewhere in the work tree"


def refusals(output: str, root: Path) -> list[Refusal]:
    """The paths the sandbox refused in `output`, the first of each fix (one per folder)."""
    lines = output.splitlines()
    found: dict[str, Refusal] = {}
    root = Path(os.path.abspath(root))
    for i, line in enumerate(lines):
        if not _EROFS_RE.search(line):
            continue
        for candidate in [line, *reversed(lines[max(0, i - _LOOK_BACK) : i])]:
            if match := _QUOTED_RE.search(candidate) or _BARE_RE.search(candidate):
                path = match.group(1).rstrip(".:")
                fix = _fix(path, root)
                found.setdefault(fix, Refusal(path, fix))
                break
    return list(found.values())
