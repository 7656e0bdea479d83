"""cardrunner's own index files: filled from a tree with the stat data git already has.

Every snapshot is built in an index of our own (`git/repo.py`), so the user's staging area is
never touched. An index read fresh from a tree knows no file's stat, so `git add -A` over the
write area hashes every file in it: 0.5 s for 3,000 files of a 17,000-file repository, twice
before an isolated run's first model request (its base snapshot and the first fingerprint), and
again at every diff and commit. An index begun as a copy of the repository's own and moved onto
the tree with git's one-tree merge (`read-tree -m`) holds exactly the tree's entries too, but
keeps the stat data of every file whose content is the tree's: `git add` then hashes only the
files whose stat changed. The copy keeps the original's time, so entries git would treat as
racily clean (written in the index's own second) are still compared by content.

What the copy may carry that a fresh index would not, and how it is kept out:

- entries the user marked assume-unchanged or skip-worktree (`git update-index`): a snapshot
  would not see a change to them, so an index with any such entry is read fresh instead;
- settings that make git trust stat data more than it compares (`core.ignoreStat`,
  `core.trustctime`, `core.checkStat`) or cache folders' untracked files (`core.untrackedCache`,
  which a folder's restored time fools): `STAT_CONFIG` fixes them on every call that reads or
  fills one of our indexes, whatever the repository's config says.

Git's granularity is one more gap: it compares whole seconds of ctime, and judges an entry
racy by its mtime alone, so a same-size rewrite in the second git looked at the file, its mtime
put back, looks unchanged — to `git status` on the user's index alike. An index kept for a run
closes it with `forget_recent`: before each look, entries whose ctime is that recent lose their
stat data (the same blob, set again), and git hashes those files again.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

from cardrunner.git.process import GitOut

STAT_CONFIG: tuple[str, ...] = (
    "-c", "core.ignoreStat=false",
    "-c", "core.trustctime=true",
    "-c", "core.checkStat=default",
    "-c", "core.untrackedCache=false",
    "-c", "core.splitIndex=false",
)  # fmt: skip
"""Every file's stat compared in full, no cache of untracked folders, one whole index file."""

_ENTRY = re.compile(
    rb"(\d+ [0-9a-f]+ \d\t[^\0]+)\0  ctime: (\d+):\d+\n"
    rb"  mtime: [^\n]*\n  dev: [^\n]*\n  uid: [^\n]*\n  size: [^\n]*\n"
)
"""One entry of `git ls-files -s --debug -z`: `mode blob stage<TAB>name` as `update-index
--index-info` takes it back, then its stat data, one field a line."""

Git = Callable[..., Awaitable[GitOut]]
"""`GitRepo._git`: runs `git args` (keyword `env`, `check`) in the repository."""


async def fill_index(git: Git, own: Path, index: Path, tree: str) -> None:
    """Fill the index file `index` with exactly `tree`, keeping the stat data of `index` as it
    is, or else of a copy of the repository's own index `own`, wherever a file's content is
    the tree's. Where the copy holds flagged entries or git refuses it (unmerged entries),
    `index` is read fresh from `tree`: the same entries, no stat data."""
    env = {"GIT_INDEX_FILE": str(index)}
    copied = not await asyncio.to_thread(index.exists) and await asyncio.to_thread(
        _copy, own, index
    )
    looked = await _looked(index)  # before read-tree writes the file anew
    merged = await git(*STAT_CONFIG, "read-tree", "-m", tree, env=env, check=False)
    if merged.code == 0 and not (copied and await _flagged(git, env)):
        await _forget_since(git, index, [], looked)
        return
    await asyncio.to_thread(index.unlink, True)
    await git(*STAT_CONFIG, "read-tree", tree, env=env)


def _copy(own: Path, index: Path) -> bool:
    """Copy `own` to `index` with its times (git judges racy entries by the index's time)."""
    with contextlib.suppress(OSError):
        shutil.copy2(own, index)
        return True
    return False


async def _flagged(git: Git, env: dict[str, str]) -> bool:
    """True when an entry is marked assume-unchanged (a lowercase tag) or skip-worktree (`S`):
    a change to that file would not show in a snapshot."""
    listing = await git("ls-files", "-v", "-z", env=env)
    return any(not entry.startswith("H ") for entry in listing.items())


async def _looked(index: Path) -> int | None:
    """About when git last looked at the files of `index`: its file's time, less 2 s for a look
    and a write that straddle seconds; None if there is no such file."""
    try:
        return int((await asyncio.to_thread(index.stat)).st_mtime) - 2
    except FileNotFoundError:
        return None


async def forget_recent(git: Git, index: Path, specs: list[str]) -> None:
    """Drop the stat data of the entries of `index` under `specs` whose ctime is not older than
    git's last look at them (`_looked`): git recorded it in the second where a same-size
    rewrite with its mtime put back looks unchanged. Each keeps its blob, so the index still
    holds the same tree; the next `git add` hashes those files again."""
    await _forget_since(git, index, specs, await _looked(index))


async def _forget_since(git: Git, index: Path, specs: list[str], since: int | None) -> None:
    """`forget_recent` from the time `since` (nothing when None); `specs` empty: every entry."""
    if since is None:
        return
    env = {"GIT_INDEX_FILE": str(index)}
    listing = await git(*STAT_CONFIG, "ls-files", "-s", "--debug", "-z", "--", *specs, env=env)
    recent = [m[1] for m in _ENTRY.finditer(listing.stdout) if int(m[2]) >= since]
    if recent:
        entries = b"".join(entry + b"\0" for entry in recent)
        await git(*STAT_CONFIG, "update-index", "-z", "--index-info", env=env, data=entries)
