"""The git port, extended for runs that leave the machine: branches, remotes and history.

A card run on CI ends as a branch on a remote, not as a commit on the user's branch, and a board
planner needs to know which files a card touched before. These operations sit on the same
subprocess runner as `GitRepo` (same environment scrubbing, same identity fallback), so CI
behaves exactly like a local run up to the push. Nothing here ever forces anything: a branch
that exists is an error, a push that is not a fast-forward fails.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cardrunner.card.record import RunRecord, record_from_trailers, unclosing
from cardrunner.git.repo import GitError, GitRepo, not_option

_SHA = re.compile(r"[0-9a-f]{4,64}")


PARALLEL = ("-c", "checkout.workers=0")
"""A worktree's checkout writes files with one worker a core, not git's default one: 3–6 s
instead of 18–32 s for 17,000 files on a loaded two-core machine (bench/RESULTS.md, issue 41)."""


@dataclass
class CardHistory:
    """Which commits carry which card's `Card:` trailer, and what each of them changed."""

    commits: dict[str, list[str]] = field(default_factory=dict)
    """Card slug → its commits, newest first."""
    files: dict[str, frozenset[str]] = field(default_factory=dict)
    """Commit → the files it changed, relative to the workspace."""
    recorded: dict[str, list[str]] = field(default_factory=dict)
    """Card slug → the run commits its card commits name in `Commit:` trailers, newest first
    (a run kept on a branch of its own names a commit that is not on HEAD)."""


_FIELD, _GROUP = "\x1f", "\x1d"
_TRAILERS = "%(trailers:only,unfold,separator=%x1f)"
"""A commit's trailers, one `Key: value` per field, continuation lines joined."""


def _trailers(text: str) -> list[tuple[str, str]]:
    """`Key: value` fields (as `_TRAILERS` prints them) as pairs; anything else is skipped."""
    found = []
    for item in text.split(_FIELD):
        key, colon, value = item.partition(":")
        if colon and key.strip():
            found.append((key.strip(), value.strip()))
    return found


@dataclass(frozen=True)
class StartPoint:
    """Where a checkout was before a run switched it to a card's branch, to go back there."""

    commit: str
    branch: str | None
    """None when HEAD was detached (as CI checkouts of a pull request are)."""


class BranchRepo(GitRepo):
    """`GitRepo` plus the branch, worktree, remote and history operations of an isolated run,
    a CI run and a board plan."""

    async def worktrees(self) -> frozenset[Path]:
        """The worktrees git itself knows of (git keeps real paths), the main one included."""
        out = await self._git("worktree", "list", "--porcelain", "-z")
        items = out.items()
        return frozenset(
            Path(i.removeprefix("worktree ")) for i in items if i.startswith("worktree ")
        )

    async def add_worktree(self, path: Path, branch: str) -> None:
        """Check `branch` out at `path`; a new branch starts at HEAD."""
        not_option(branch, "branch")
        exists = await self._git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
        if exists.code == 0:
            await self._git(*PARALLEL, "worktree", "add", "--", str(path), branch)
        else:
            await self._git(*PARALLEL, "worktree", "add", "-b", branch, "--", str(path), "HEAD")

    async def park_worktree(self, path: Path, parked: Path) -> bool:
        """Move the worktree at `path` aside to `parked`, its HEAD detached so its branch is
        free (the files stay as the run left them); False, changing nothing, where it cannot
        be (`parked` is taken)."""
        if await asyncio.to_thread(os.path.lexists, parked):
            return False
        await GitRepo(path)._git("checkout", "-q", "--detach")
        return (
            await self._git("worktree", "move", "--", str(path), str(parked), check=False)
        ).code == 0

    async def take_worktree(self, parked: Path, path: Path, branch: str) -> bool:
        """Bring the parked worktree to `path` on `branch` (new at HEAD, or the kept one) with
        exactly its commit's files: tracked files reset, everything else (ignored files too)
        deleted, so nothing of the run that used it before is left. Only the files that
        differ are written: on a big repository that is what a fresh worktree costs most."""
        if await asyncio.to_thread(parked.resolve) not in await self.worktrees():
            return False  # not one git made (it may have come with the repository's files)
        if (await self._git("worktree", "move", "--", str(parked), str(path), check=False)).code:
            return False
        tree = GitRepo(path)
        known = await self._git(
            "rev-parse", "--verify", "-q", f"refs/heads/{not_option(branch, 'branch')}", check=False
        )
        start = [branch] if known.code == 0 else ["-B", branch, (await self.head()) or "HEAD"]
        try:
            await tree._git(*PARALLEL, "checkout", "-q", "-f", *start)
            await tree._git("clean", "-q", "-ffdx")
        except GitError:  # e.g. the kept branch is checked out elsewhere: make a fresh one
            await self.remove_worktree(path, force=True)
            return False
        return True

    async def remove_worktree(self, path: Path, force: bool = False) -> None:
        """Remove the worktree at `path` (`force`: even with changes in it)."""
        await self._git("worktree", "remove", *(["--force"] if force else []), "--", str(path))

    async def cherry_pick_clean(self, sha: str) -> bool:
        """Apply commit `sha` on the current branch if it applies cleanly; else change nothing.

        Git itself refuses before touching anything when local changes are in the way; on a
        conflict the cherry-pick is aborted, which puts back the state from before.
        """
        if await self.head() is None or await self._cherry_picking():
            return False
        ident = await self._identity()
        picked = not_option(sha, "commit")
        out = await self._git(*ident, "cherry-pick", "--no-rerere-autoupdate", picked, check=False)
        if out.code == 0:
            return True
        if await self._cherry_picking():
            await self._git("cherry-pick", "--abort", check=False)
        return False

    async def _cherry_picking(self) -> bool:
        out = await self._git("rev-parse", "-q", "--verify", "CHERRY_PICK_HEAD", check=False)
        return out.code == 0

    async def tracked_files(self) -> list[str]:
        """Every file in the index under the workspace, relative to it."""
        return (await self._git("ls-files", "-z")).items()

    async def files_of(self, commits: list[str]) -> set[str]:
        """The files the given commits changed; commits this repository lacks are skipped."""
        files: set[str] = set()
        for sha in (c for c in commits if _SHA.fullmatch(c)):  # a card's text is not an option
            out = await self._git(
                "show",
                "--relative",
                "--no-renames",
                "--name-only",
                "-z",
                "--format=",
                sha,
                check=False,
            )
            if out.code == 0:
                files.update(out.items())
        return files

    async def card_history(self) -> CardHistory:
        """Every commit on HEAD with a `Card:` trailer and the files it changed, in one pass.

        One `git log` for the whole board: a plan of a thousand cards costs one history walk,
        not one per card.
        """
        history = CardHistory()
        if await self.head() is None:
            return history
        fmt = f"%x1e%H%x1d{_TRAILERS}%x1d"
        out = await self._git(
            "log", "-z", "--relative", "--no-renames", "--name-only", f"--format={fmt}", "HEAD"
        )
        text = out.stdout.decode("utf-8", errors="surrogateescape")
        for record in filter(None, text.split("\x1e")):
            sha, _, rest = record.partition(_GROUP)
            trailers, _, names = rest.partition(_GROUP)
            found = _trailers(trailers)
            slugs = list(dict.fromkeys(v for k, v in found if k.lower() == "card" and v))
            if not slugs:
                continue
            sha = sha.strip()
            history.files[sha] = frozenset(n for n in names.lstrip("\0\n").split("\0") if n)
            named = [v for k, v in found if k.lower() == "commit" and _SHA.fullmatch(v)]
            for slug in slugs:
                history.commits.setdefault(slug, []).append(sha)
                if named:
                    history.recorded.setdefault(slug, []).extend(named)
        return history

    async def card_runs(self, slug: str, rev: str = "HEAD") -> list[RunRecord]:
        """The card's run records, newest first, read from the trailers of its card commits in
        `rev` (`run/cardstore.py`): the history the card itself no longer keeps. A commit
        counts when it names the card and carries a `Result:` (a run's work commit names the
        card too, but its record is the card commit's)."""
        return (await self.all_card_runs(rev)).get(slug, [])

    async def all_card_runs(self, rev: str = "HEAD") -> dict[str, list[RunRecord]]:
        """Every card's run records in `rev` (card slug → newest first), in one `git log`: what
        a cost forecast learns from the repository's past runs."""
        if await self.head() is None:
            return {}
        return await self.card_runs_at(rev)

    async def card_runs_at(self, commit: str) -> dict[str, list[RunRecord]]:
        """`all_card_runs` of a commit the caller has just read (`head`): one `git log`, with
        no second look at HEAD — a server reading the costs after every run counts its forks."""
        if commit.startswith("-"):
            return {}
        out = await self._git("log", "--grep=Result:", f"--format=%x1e{_TRAILERS}", commit, "--")
        runs: dict[str, list[RunRecord]] = {}
        for record in filter(None, out.stdout.decode("utf-8", "replace").split("\x1e")):
            found = _trailers(record.strip())
            if "result" not in {k.lower() for k, _ in found}:
                continue
            for slug in dict.fromkeys(v for k, v in found if k.lower() == "card" and v):
                runs.setdefault(slug, []).append(record_from_trailers(found))
        return runs

    async def start_point(self) -> StartPoint:
        """The commit and branch checked out now; raises GitError without any commit."""
        head = await self.head()
        if head is None:
            raise GitError("the repository has no commit to start a card's branch from")
        return StartPoint(head, await self.branch())

    async def index_matches_head(self) -> bool:
        """True when nothing is staged: a CI run's one commit must hold only the run's work."""
        out = await self._git("diff", "--cached", "--quiet", "--no-ext-diff", check=False)
        return out.code == 0

    async def has_branch(self, branch: str) -> bool:
        out = await self._git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
        return out.code == 0

    async def remote_has_branch(self, remote: str, branch: str) -> bool:
        """True if `remote` (a name, a URL or a path) already has `branch`."""
        where = not_option(remote, "remote")
        out = await self._git(
            "ls-remote", "--heads", "--", where, f"refs/heads/{not_option(branch, 'branch')}",
            check=False,
        )  # fmt: skip
        if out.code != 0:
            raise GitError(f"cannot reach the remote {remote!r}: {out.stderr or out.text}")
        return bool(out.text)

    async def switch_new(self, branch: str, at: str | None = None) -> None:
        """Create `branch` at HEAD (or the commit `at`) and check it out; uncommitted changes
        come along (git refuses when they would be overwritten)."""
        await self._git(
            "switch", "-q", "-c", not_option(branch, "branch"),
            *([not_option(at, "start commit")] if at else []),
        )  # fmt: skip

    async def fetch_branch(self, remote: str, branch: str) -> str:
        """Fetch `branch` of `remote` (a name, a URL or a path); the commit it is at."""
        where, ref = not_option(remote, "remote"), f"refs/heads/{not_option(branch, 'branch')}"
        await self._git("fetch", "-q", "--no-tags", "--", where, ref)
        return (await self._git("rev-parse", "--verify", "FETCH_HEAD^{commit}")).text

    async def switch_back(self, start: StartPoint) -> None:
        """Check out where the run started; uncommitted changes (a card's state) come along."""
        if start.branch:
            await self._git("switch", "-q", not_option(start.branch, "branch"))
        else:
            await self._git("switch", "-q", "--detach", not_option(start.commit, "commit"))

    async def take_back(self, sha: str, keep_as: str, paths: list[str]) -> str | None:
        """Move HEAD from the commit `sha` back to its parent, keeping `sha` on the new branch
        `keep_as`, and the index under `paths` with it; the parent, or None when HEAD is no
        longer `sha` or `sha` has no parent (then nothing moved). The move is a compare-and-swap:
        a commit made on top meanwhile is never lost."""
        out = await self._git(
            "rev-parse", "--verify", "-q", f"{not_option(sha, 'commit')}^", check=False
        )
        if out.code != 0 or await self.head() != sha:
            return None
        parent = out.text
        await self._git("branch", "-q", "--", not_option(keep_as, "branch"), sha)
        await self._git(
            "update-ref", "-m", "cardrunner: the run did not end Done", "HEAD", parent, sha
        )
        await self._git("reset", "-q", parent, "--", *self._specs(paths), check=False)
        return parent

    async def delete_branch(self, branch: str) -> None:
        await self._git("branch", "-q", "-D", "--", not_option(branch, "branch"))

    async def own_commits(self, branch: str) -> int:
        """How many commits of `branch` no other branch has: what deleting it would lose."""
        out = await self._git(
            "rev-list", "--count", f"refs/heads/{not_option(branch, 'branch')}",
            "--not", f"--exclude={branch}", "--branches",  # (--branches matches short names)
        )  # fmt: skip
        return int(out.text or "0")

    async def prune_worktrees(self) -> None:
        """Forget worktrees whose folder is gone, so their branches can be deleted plainly."""
        await self._git("worktree", "prune", check=False)

    async def commits_since(self, base: str) -> list[str]:
        """Commits on HEAD after `base`, oldest first."""
        return (
            await self._git("rev-list", "--reverse", f"{not_option(base, 'commit')}..HEAD")
        ).text.split()

    async def message(self, sha: str) -> str:
        out = await self._git("log", "-1", "--format=%B", not_option(sha, "commit"), "--")
        return out.stdout.decode("utf-8", "replace")

    async def fold_into_one(self, base: str, message: str, extra: list[str]) -> str:
        """Replace the commits after `base` by one commit that also holds the files `extra`.

        HEAD's tree plus the working-tree state of `extra` (say, the card with its new state)
        becomes one commit on `base` with `message`; the branch moves to it and the index is
        brought in line. Built with plumbing like `GitRepo.commit`, so no hook runs.
        """
        head = await self.head()
        async with self._temp_index(head) as env:
            await self._add_paths(extra, env)
            tree = (await self._git("write-tree", env=env)).text
        ident = await self._identity()
        message = unclosing(message, note=False)  # no commit of ours closes an issue
        parent = not_option(base, "commit")
        sha = (await self._git(*ident, "commit-tree", tree, "-p", parent, "-m", message)).text
        subject = message.strip().splitlines()[0] if message.strip() else ""
        await self._git("update-ref", "-m", f"commit: {subject}", "HEAD", sha, head or "")
        await self._git("reset", "-q", sha, "--", *extra, check=False)
        return sha

    async def push(self, remote: str, branch: str) -> None:
        """Push HEAD to `branch` on `remote` as a new branch; never forced."""
        where, ref = not_option(remote, "remote"), f"HEAD:refs/heads/{not_option(branch, 'branch')}"
        out = await self._git("push", "--porcelain", "--", where, ref, check=False)
        if out.code != 0:
            raise GitError(f"git push to {remote!r} failed: {out.stderr or out.text}")
