"""A new worktree gets the files an install generated in the checkout: what git ignores but code imports.

A worktree holds exactly what is committed. A project's install can write files into its own
source tree that git ignores and its code still imports — setuptools_scm's `_version.py`, a
generated parser, a `.env` its tests read — so an isolated run's baseline failed on a project
that passes in the checkout ("module 'pkg._version' is not installed"). So the ignored *files*
of the checkout are copied into the new worktree once, before the run's first check. Ignored
folders are not (installed dependencies are shown by the sandbox, read-only, and caches and
build output are made again), nor build output (`paths.build_output`), links, or anything over
the size caps: a generated file is small, a data dump is not the project's source.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from cardrunner.config.paths import STATE_DIR
from cardrunner.git.repo import GitRepo

MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 20 << 20


async def seed_worktree(main: GitRepo, worktree: Path, build_output: Sequence[str]) -> list[str]:
    """Copy the checkout's ignored files into `worktree`; the root-relative paths copied."""
    listed = await main.ignored_listing()
    wanted = [p for p in listed if not p.endswith("/") and _kept(p, build_output)]
    return await asyncio.to_thread(_copy, main.root, worktree, wanted)


def _kept(path: str, build_output: Sequence[str]) -> bool:
    """Not cardrunner's or git's own, and no build output (git's `**/` globs, at any depth)."""
    if path.split("/", 1)[0] in (STATE_DIR, ".git"):
        return False
    globs = [g for glob in build_output for g in (glob, glob.removeprefix("**/"))]
    return not any(fnmatch.fnmatchcase(path, glob) for glob in globs)


def _copy(root: Path, worktree: Path, wanted: list[str]) -> list[str]:
    copied: list[str] = []
    total = 0
    for rel in wanted:
        source, target = root / rel, worktree / rel
        try:
            info = os.lstat(source)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            continue
        if total + info.st_size > MAX_TOTAL_BYTES or os.path.lexists(target):
            continue
        if not target.parent.resolve().is_relative_to(worktree.resolve()):
            continue  # a folder of the worktree that is a link out of it: never write through
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
        total += info.st_size
        copied.append(rel)
    return copied
