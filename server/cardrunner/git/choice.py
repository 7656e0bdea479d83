"""The tree a review's choices leave: what the reviewer saw, with their edits, minus their drops.

A reviewer may drop hunks, drop whole files and edit files by hand while the review is open, in
any order; what is committed must be exactly the bytes they kept. So nothing here works on line
numbers of a recomputed diff, or on the working tree:

- a dropped hunk is one of the diff the reviewer saw (`Reviewed.raw`, kept as git wrote it), so
  a hand edit made since cannot shift which hunk is meant;
- the commit's tree is built in an index of our own: the write area as it is at accept (hand
  edits and files the reviewer added included), with dropped files put back and the dropped
  hunks' bytes applied in reverse (`GitRepo.tree_without`), so CRLF, form feeds, a missing
  final newline, binary files and modes are kept as they are;
- only then is the working tree brought in line with that tree, for the files a drop touched.

A hand edit over the very lines of a dropped hunk cannot be combined with the drop: that is a
`ChoiceError`, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from cardrunner.agent.review import HunkRef
from cardrunner.git.hunks import Hunk, decode_raw, encode_raw, parse_diff, patch_of, quote
from cardrunner.git.repo import GitError, GitRepo


class ChoiceError(Exception):
    """The reviewer's choices cannot be applied as they stand; the message says why."""


@dataclass(frozen=True)
class Reviewed:
    """What the review showed: the write area's tree and the diff to it, byte for byte."""

    base_tree: str
    tree: str
    raw: bytes
    files: list[str]


@dataclass(frozen=True)
class Choice:
    """The reviewer's answer, resolved: edits, drops and the tree that results."""

    reviewed: Reviewed
    now: str
    """The write area at accept: the reviewed tree plus the reviewer's hand edits."""
    final: str
    """What is committed: `now` without the dropped files and hunks."""
    edited: list[str]
    """Files the reviewer changed, added or deleted by hand since the review opened."""
    whole: list[str]
    """Files dropped whole: put back as they were at the run's start."""
    hunks: list[Hunk]
    """Hunks dropped, as the reviewer saw them; the reviewer's own edits around them stay."""

    @property
    def dropped(self) -> list[str]:
        """The files a drop touched."""
        return sorted({*self.whole, *(h.path for h in self.hunks)})

    @property
    def changed(self) -> list[str]:
        """Every file whose committed bytes differ from what the review showed."""
        return sorted({*self.edited, *self.dropped})

    def describe_drops(self) -> str:
        """`src/a.py hunk 2 (@@ -28,3 +28,3 @@, +1/-1); "notes \\"v2\\".py" (whole file)`."""
        parts = [h.describe() for h in self.hunks] + [
            f"{quote(f)} (whole file)" for f in self.whole
        ]
        return "; ".join(parts)


def _resolve(
    reviewed: Reviewed, files: list[str], refs: list[HunkRef]
) -> tuple[list[str], list[Hunk], bytes]:
    """Files to drop whole, hunks to undo and their patch, all against the reviewed diff."""
    parsed = parse_diff(decode_raw(reviewed.raw))
    whole = sorted(set(files) & set(reviewed.files))
    known = {h.ref for h in parsed.hunks()}
    unknown = [r for r in refs if r not in known and r.path not in whole]
    if unknown:
        listed = ", ".join(f"{quote(r.path)} hunk {r.index + 1}" for r in unknown)
        raise ChoiceError(f"the review has no {listed}: nothing was dropped or committed")
    picked = {r for r in refs if r in known and r.path not in whole}
    hunks = [h for h in parsed.hunks() if h.ref in picked]
    return whole, hunks, encode_raw(patch_of(parsed, picked))


async def choose(
    git: GitRepo, paths: list[str], reviewed: Reviewed, now: str, files: list[str],
    refs: list[HunkRef],
) -> Choice:  # fmt: skip
    """The tree to commit when the write area is `now` and the reviewer dropped `files` and
    the hunks `refs` of the diff they saw. Nothing on disk changes."""
    whole, hunks, patch = _resolve(reviewed, files, refs)
    edited = (await git.diff_trees(reviewed.tree, now, paths))[1] if now != reviewed.tree else []
    final = now
    if whole or hunks:
        try:
            final = await git.tree_without(now, reviewed.base_tree, whole, patch)
        except GitError as exc:
            drops = "; ".join(h.describe() for h in hunks)
            raise ChoiceError(
                f"the reviewer dropped {drops} and also edited those lines by hand; the two "
                f"cannot both hold ({exc}). Nothing was dropped or committed"
            ) from exc
    return Choice(reviewed, now, final, edited, whole, hunks)


async def settle(git: GitRepo, choice: Choice) -> None:
    """Make the working tree hold the chosen bytes of every file a drop touched."""
    if choice.dropped:
        await git.restore(choice.final, choice.dropped)


async def committed_files(git: GitRepo, choice: Choice, paths: list[str]) -> list[str]:
    """The files the commit of `choice.final` changes against the run's start."""
    return (await git.diff_trees(choice.reviewed.base_tree, choice.final, paths))[1]
