"""Where a run works, and how its changes are kept or undone when it ends.

Without isolation the run works in the user's checkout, inside the write area only: the start
state is recorded as a git tree, and a cancelled or rejected run puts the write area back byte for
byte (its own changes are saved as a tree first, so a resume can bring them back). With isolation
the run works in its own git worktree on a branch `cards/<slug>`: the user's working tree is
untouched, an accepted commit is brought onto the user's branch only if it applies cleanly, and
nothing is ever forced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cardrunner.agent.events import RunFinished
from cardrunner.config.paths import StatePaths
from cardrunner.git.repo import GitError, GitRepo

UNDO_REASONS = frozenset({"cancelled", "rejected"})


class WorkAreaError(Exception):
    """The run cannot start here; the message says why."""


@dataclass
class WorkArea:
    main: GitRepo
    git: GitRepo
    paths: list[str]
    base_tree: str
    worktree: Path | None = None
    branch: str | None = None
    ignored_at_start: frozenset[str] = frozenset()
    """Ignored files in the write area at start; others the run creates are undone with it."""

    @property
    def root(self) -> Path:
        return self.worktree or self.main.root

    @classmethod
    async def open(
        cls,
        root: Path,
        paths: list[str],
        slug: str,
        *,
        isolation: bool,
        resume_base: str | None = None,
        resume_work: str | None = None,
        build_output: Sequence[str] = (),
    ) -> WorkArea:
        """The work area of a run; `build_output` globs are never part of its changes."""
        main = GitRepo(root, build_output)
        if not await main.is_repo():
            raise WorkAreaError(
                f"{root} is not a git repository; cardrunner commits its work with git"
            )
        if isolation:
            return await cls._isolated(main, paths, slug, resume_base, resume_work)
        if resume_base is None:
            dirty = await main.dirty_files(paths)
            if dirty:
                raise WorkAreaError(
                    "uncommitted changes in the write area would be mixed with the run's: "
                    + ", ".join(dirty[:20])
                    + ". Commit or stash them first."
                )
            ignored = await main.ignored_files(paths)
            return cls(main, main, paths, await main.snapshot(paths), ignored_at_start=ignored)
        if resume_work is not None:
            if await main.snapshot(paths) != resume_base:
                raise WorkAreaError(
                    "the write area changed since the run stopped; cannot bring its work back"
                )
            await main.restore(resume_work, paths)
        ignored = await main.ignored_files(paths)
        return cls(main, main, paths, resume_base, ignored_at_start=ignored)

    @classmethod
    async def _isolated(
        cls,
        main: GitRepo,
        paths: list[str],
        slug: str,
        resume_base: str | None,
        resume_work: str | None,
    ) -> WorkArea:
        worktree = StatePaths(main.root).ensure().worktree(slug)  # ignored before it exists
        branch = f"cards/{slug}"
        if not worktree.exists():
            if await main.head() is None:
                raise WorkAreaError("isolation needs at least one commit in the repository")
            await main.add_worktree(worktree, branch)
        git = GitRepo(worktree, main.build_output)
        if resume_work is not None:
            await git.restore(resume_work, paths)
        base = resume_base or await git.snapshot(paths)
        ignored = await git.ignored_files(paths)
        return cls(main, git, paths, base, worktree, branch, ignored)

    async def finish(self, result: RunFinished) -> tuple[RunFinished, str]:
        """Keep or undo the run's changes; returns the result to record and a note for the user."""
        if self.worktree is None:
            if result.reason not in UNDO_REASONS:
                return result, ""
            work = await self.git.snapshot(self.paths)
            hidden = await self.git.ignored_files(self.paths) - self.ignored_at_start
            await self.git.remove_files(sorted(hidden), self.paths)
            if work == self.base_tree:
                return result, ""
            await self.git.restore(self.base_tree, self.paths)
            note = "the write area was restored to its state at run start"
            return result.model_copy(update={"work_tree": work}), note
        if result.status == "done" and result.commit:
            applied = await self.main.cherry_pick_clean(result.commit)
            await self.main.remove_worktree(self.worktree, force=True)
            if applied:
                head = await self.main.head()
                if self.branch:  # its commit is on the user's branch now: nothing to keep
                    with contextlib.suppress(GitError):
                        await self.main.delete_branch(self.branch)
                return result.model_copy(
                    update={"commit": head}
                ), f"brought onto your branch from {self.branch} (branch deleted)"
            note = (
                f"the commit {result.commit[:10]} does not apply cleanly to your branch; it "
                f"stays on {self.branch} — merge or rebase it yourself (the card waits in Review)"
            )
            return result.model_copy(update={"unmerged_branch": self.branch, "detail": note}), note
        if result.reason in UNDO_REASONS:
            work = await self.git.snapshot(self.paths)
            await self.main.remove_worktree(self.worktree, force=True)
            return result.model_copy(update={"work_tree": work}), "the run's worktree was removed"
        return result, f"the run's worktree stays at {self.worktree} for a resume"
