"""Where a run works, and how its changes are kept or undone when it ends.

Without isolation the run works in the user's checkout, inside the write area only: the start
state is recorded as a git tree, and a cancelled or rejected run puts the write area back byte for
byte (its own changes are saved as a tree first, so a resume can bring them back). With isolation
every run works in its own git worktree `.cardrunner/worktrees/<run-id>` on its own branch
`cardrunner/<run-id>`, named by the run, never by the card's slug: two cards, or a new run of a
card whose last run failed, never see each other's files; only a resume of that very run comes
back to its worktree. The user's working tree is untouched, an accepted commit is brought onto
the user's branch only if it applies cleanly, and nothing is ever forced.

When an isolated run ends its worktree is removed, and nothing goes without a word: the
result's note says what was kept and where. The run's files are kept as a tree in the result
(`work_tree`, what a resume brings back into a fresh worktree); its branch is kept only if it
holds a commit no other branch has (it is a plain branch then: `git branch -D` deletes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cardrunner.agent.events import RunFinished
from cardrunner.config.paths import StatePaths
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError, GitRepo
from cardrunner.run.seed import seed_worktree

UNDO_REASONS = frozenset({"cancelled", "rejected"})
_TREE_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class WorkAreaError(Exception):
    """The run cannot start here; the message says why."""


@dataclass
class WorkArea:
    main: BranchRepo
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
        run_id: str,
        *,
        isolation: bool,
        resume_base: str | None = None,
        resume_work: str | None = None,
        build_output: Sequence[str] = (),
    ) -> WorkArea:
        """The work area of a run; `build_output` globs are never part of its changes."""
        main = BranchRepo(root, build_output)
        if not await main.is_repo():
            raise WorkAreaError(
                f"{root} is not a git repository; cardrunner commits its work with git"
            )
        if isolation:
            return await cls._isolated(main, paths, run_id, resume_base, resume_work)
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
        base = (await carried(main, paths, [resume_base]))[resume_base]
        if resume_work is not None:
            if await main.snapshot(paths) != base:
                raise WorkAreaError(
                    "the write area changed since the run stopped; cannot bring its work back"
                )
            await main.restore(resume_work, paths)
        ignored = await main.ignored_files(paths)
        return cls(main, main, paths, base, ignored_at_start=ignored)

    @classmethod
    async def _isolated(
        cls,
        main: BranchRepo,
        paths: list[str],
        run_id: str,
        resume_base: str | None,
        resume_work: str | None,
    ) -> WorkArea:
        worktree = StatePaths(main.root).ensure().worktree(run_id)  # ignored before it exists
        branch = f"cardrunner/{run_id}"
        if worktree.exists() or worktree.is_symlink():
            if await asyncio.to_thread(worktree.resolve) not in await main.worktrees():
                raise WorkAreaError(
                    f"{worktree} is not a worktree git knows of (it may have come with the "
                    "repository's files); cardrunner will not work in it. Remove it to run."
                )
        else:
            if await main.head() is None:
                raise WorkAreaError("isolation needs at least one commit in the repository")
            await main.prune_worktrees()  # a folder deleted by hand
            await main.add_worktree(worktree, branch)  # a resume's kept branch is reused
            await seed_worktree(main, worktree, main.build_output)  # what an install generated
        git = GitRepo(worktree, main.build_output)
        if resume_work is not None:
            await git.restore(resume_work, paths)
        if resume_base is None:
            base = await git.snapshot(paths)
        else:  # the branch as it is now, which the card's commits may have moved
            base = (await carried(git, paths, [resume_base]))[resume_base]
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
            return await self._land(result)
        work = await self.git.snapshot(self.paths)
        kept = await self._remove_isolation()
        changed = work != self.base_tree
        if changed:
            kept.insert(0, f"the run's files are kept as the tree {work[:10]} for a resume")
        note = "the run's worktree was removed; " + ("; ".join(kept) or "it had changed nothing")
        return result.model_copy(update={"work_tree": work if changed else None}), note

    async def _land(self, result: RunFinished) -> tuple[RunFinished, str]:
        """A Done run's commit onto the user's branch if it applies cleanly, else kept on its
        branch; the worktree goes either way."""
        assert self.worktree is not None and self.branch is not None and result.commit
        applied = await self.main.cherry_pick_clean(result.commit)
        if applied:  # its commit is on the user's branch now (a copy): the branch is spent
            await self._remove_isolation(keep_commits=False)
            head = await self.main.head()
            note = f"brought onto your branch from {self.branch} (worktree and branch removed)"
            return result.model_copy(update={"commit": head}), note
        kept = await self._remove_isolation()
        note = (
            f"the commit {result.commit[:10]} does not apply cleanly to your branch; it "
            f"stays on {self.branch} — merge or rebase it yourself (the card waits in Review)"
        )
        note += "".join(f"; {k}" for k in kept if self.branch not in k)
        return result.model_copy(update={"unmerged_branch": self.branch, "detail": note}), note

    async def _remove_isolation(self, keep_commits: bool = True) -> list[str]:
        """Remove the worktree (and its registration), and the branch unless it holds a commit
        of its own (`keep_commits`); returns what was kept, for the user."""
        assert self.worktree is not None and self.branch is not None
        repo = self.main
        await repo.remove_worktree(self.worktree, force=True)
        await repo.prune_worktrees()
        if not await repo.has_branch(self.branch):
            return []
        own = await repo.own_commits(self.branch) if keep_commits else 0
        if own:
            return [f"the branch {self.branch} keeps {own} commit(s) (`git branch -D` deletes it)"]
        with contextlib.suppress(GitError):
            await repo.delete_branch(self.branch)
        return []


async def carried(git: GitRepo, paths: list[str], trees: Iterable[str]) -> dict[str, str]:
    """Each snapshot of `trees`, taken on an older HEAD, as `git.snapshot(paths)` reads the same
    write area on HEAD as it is now.

    A snapshot is HEAD's tree with the write area on it, so it changes when HEAD moves outside
    the write area though no file in it did: the card's state committed after the run stopped,
    a resumed isolated run's fresh worktree on the branch as it is now. Carried over, the same
    write area gives the same tree again, and a write area that differs still differs. What is
    not a tree git has (a log's placeholder, an object pruned since) stays as it is.
    """
    now = await git.snapshot(paths)
    out: dict[str, str] = {}
    for tree in set(trees):
        out[tree] = tree
        if _TREE_ID.fullmatch(tree):
            with contextlib.suppress(GitError):
                out[tree] = await git.tree_without(now, tree, paths, b"")
    return out
