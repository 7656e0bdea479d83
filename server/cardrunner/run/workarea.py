"""Where a run works, what a new worktree gets, and how its changes are kept or undone at the end.

Without isolation the run works in the user's checkout, inside the write area only: the start
state is recorded as a git tree, and a cancelled or rejected run puts the write area back byte for
byte (its own changes are saved as a tree first, so a resume can bring them back). With isolation
every run works in its own git worktree `.cardrunner/worktrees/<run-id>` on its own branch
`cardrunner/<run-id>`, named by the run, never by the card's slug: two cards, or a new run of a
card whose last run failed, never see each other's files; only a resume of that very run comes
back to its worktree. The user's working tree is untouched, an accepted commit is brought onto
the user's branch only if it applies cleanly, and nothing is ever forced.

A worktree holds exactly what is committed, so a new one gets the files an install generated in
the checkout: what git ignores but code imports (`seed_worktree`). A project's install can write
files into its own source tree that git ignores and its code still imports — setuptools_scm's
`_version.py`, a generated parser, a `.env` its tests read — so an isolated run's baseline failed
on a project that passes in the checkout ("module 'pkg._version' is not installed"). So the
ignored *files* of the checkout are copied into the new worktree once, before the run's first
check. Ignored folders are not (installed dependencies are shown by the sandbox, read-only, and
caches and build output are made again), nor build output (`paths.build_output`), links, or
anything over the size caps: a generated file is small, a data dump is not the project's source.

When an isolated run ends its worktree is removed, and nothing goes without a word: the
result's note says what was kept and where. The run's files are kept as a tree in the result
(`work_tree`, what a resume brings back into a fresh worktree); its branch is kept only if it
holds a commit no other branch has (it is a plain branch then: `git branch -D` deletes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.agent.events import RunFinished
from cardrunner.config.paths import STATE_DIR, StatePaths
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError, GitRepo
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.network import NetworkUnavailable, PrivateNetwork
from cardrunner.processes.sandbox import (
    DEPENDENCY_DIRS,
    PROTECTED,
    Sandbox,
    interpreter_prefixes,
    references,
    site_folders,
)

if TYPE_CHECKING:
    from cardrunner.config.settings import Settings

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
    card: str = ""
    """The card's identity: its next isolated run takes this run's worktree (`parked-<card>`)."""
    parked: bool = False
    notes: list[str] = field(default_factory=list)
    """What the user should know of where the run works: a new worktree and what git's checkout
    of it cost (on a big repository most of a first run's start; `bench/big_repo.py` reads it)."""

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
        card: str = "",
    ) -> WorkArea:
        """The work area of a run; `build_output` globs are never part of its changes. An
        isolated run of `card` (its identity) takes the worktree its last run put aside."""
        main = BranchRepo(root, build_output)
        if not await main.is_repo():
            raise WorkAreaError(
                f"{root} is not a git repository; cardrunner commits its work with git"
            )
        if isolation:
            return await cls._isolated(main, paths, run_id, resume_base, resume_work, card)
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
        card: str,
    ) -> WorkArea:
        worktree = StatePaths(main.root).ensure().worktree(run_id)  # ignored before it exists
        notes: list[str] = []
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
            parked = worktree.with_name(f"parked-{card}") if card else None
            if parked is None or not await main.take_worktree(parked, worktree, branch):
                started = time.monotonic()
                await main.add_worktree(worktree, branch)  # a resume's kept branch is reused
                made = time.monotonic() - started
                again = " (the card's next runs take it back)" if card else ""
                notes.append(f"a new worktree for the run: git's checkout took {made:.2f} s{again}")
            await seed_worktree(main, worktree, main.build_output)  # what an install generated
        git = GitRepo(worktree, main.build_output)
        if resume_work is not None:
            await git.restore(resume_work, paths)
        if resume_base is None:
            base = await git.snapshot(paths)
        else:  # the branch as it is now, which the card's commits may have moved
            base = (await carried(git, paths, [resume_base]))[resume_base]
        ignored = await git.ignored_files(paths)
        return cls(main, git, paths, base, worktree, branch, ignored, card, notes=notes)

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
        gone = "put aside for the card's next run" if self.parked else "removed"
        note = f"the run's worktree was {gone}; " + ("; ".join(kept) or "it had changed nothing")
        return result.model_copy(update={"work_tree": work if changed else None}), note

    async def _land(self, result: RunFinished) -> tuple[RunFinished, str]:
        """A Done run's commit onto the user's branch if it applies cleanly, else kept on its
        branch; the worktree goes either way."""
        assert self.worktree is not None and self.branch is not None and result.commit
        applied = await self.main.cherry_pick_clean(result.commit)
        if applied:  # its commit is on the user's branch now (a copy): the branch is spent
            await self._remove_isolation(keep_commits=False)
            head = await self.main.head()
            note = f"brought onto your branch from {self.branch} (its branch removed)"
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
        parked = self.worktree.with_name(f"parked-{self.card}")
        with contextlib.suppress(GitError):  # else removed: a fresh one costs only time
            self.parked = bool(self.card) and await repo.park_worktree(self.worktree, parked)
        if not self.parked:
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


def command_env(run_dir: Path) -> dict[str, str]:
    """Commands find the interpreter that runs cardrunner first on PATH (`python` in argv)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {"PATH": path, "CARDRUNNER_RUN_DIR": str(run_dir)}


def open_sandbox(
    settings: Settings, root: Path, area: WorkArea, run_dir: Path, groups: ProcessGroups
) -> tuple[Sandbox, list[str]]:
    """The sandbox a run works in (call it off the event loop; `close()` it at the run's end)
    and its warnings (its commands could not share one private network; a server outside it
    cannot see the app); raises `SandboxUnavailable` where the configured one cannot start,
    and WorkAreaError where an isolated run's tests would import the checkout."""
    checkout = root.resolve() if area.worktree is not None else None
    if checkout is not None and settings.sandbox.mode == "off":
        _refuse_escaping_imports(checkout, area.root)
    box = run_sandbox(settings, root, area.root, run_dir, checkout)
    if box.mode == "off" or box.network:
        return box, []  # the host's network: the app is on the host's localhost already
    try:
        box = box.joined(PrivateNetwork.open(box.binary, groups))
    except NetworkUnavailable as exc:  # still no network; only the app is out of reach
        return box, [
            f"the run's commands could not share a private network ({exc}): each gets a "
            "network of its own, so the app started by start_app is out of reach of MCP "
            "servers and of other commands"
        ]
    if not settings.commands.app_url:
        return box, []
    return box, [_outside(name) for name, server in settings.mcp.items() if server.url]


def _outside(name: str) -> str:
    """An HTTP server runs outside the run's private network, where the app is not."""
    return (
        f"MCP server {name!r} is reached over HTTP, outside this run's private network: it "
        "reaches the app through a port on this machine's 127.0.0.1 that cardrunner relays to "
        "the app while it runs (start_app names it), which any local process can open too. To "
        "keep the app private, run the browser server inside the run as a stdio server "
        '(command and args, e.g. command = "npx", args = ["@playwright/mcp", "--headless"])'
    )


def run_sandbox(
    settings: Settings, root: Path, workdir: Path, run_dir: Path, checkout: Path | None = None
) -> Sandbox:
    """The sandbox a run of `root` works in at `workdir` (the checkout, or its worktree shown at
    `checkout`), also used by `cardrunner check --try`; raises `SandboxUnavailable` where it
    cannot start."""
    box = settings.sandbox
    read = (root, Path(sys.prefix), Path(sys.base_prefix))
    return Sandbox.start(
        box.mode, workdir, run_dir,
        network=box.network, env_names=box.env, read=read, checkout=checkout,
        protect=(*PROTECTED, settings.cards), build_read=box.build_read,
        build_write=box.build_write,
    )  # fmt: skip


def _refuse_escaping_imports(checkout: Path, worktree: Path) -> None:
    """Without the sandbox an isolated run cannot redirect an editable install: refuse it."""
    prefixes = [*interpreter_prefixes(), *(checkout / name for name in DEPENDENCY_DIRS)]
    hits = references(checkout, worktree, site_folders(prefixes))
    if hits:
        file, path = hits[0]
        raise WorkAreaError(
            f"the tests would read outside the run's tree: {file} points at {path} in your "
            f"checkout, not at the worktree {worktree}, so a change that breaks them could pass. "
            'With sandbox = "off" an isolated run cannot redirect it: turn the sandbox on (it '
            "shows the worktree at the checkout's own path) or set isolation = false."
        )
