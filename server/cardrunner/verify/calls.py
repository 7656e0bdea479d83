"""The runner's own record of every tool call: what it returned and on which state of the code.

Evidence is only worth something if it can be checked. So the runner keeps, per call the model
made, the exact text the model got back and a fingerprint of the write area before and after it
(a git tree id). A criterion's evidence may then cite calls by id, and the runner can tell
whether the quoted text is really in that call's result and whether the call saw the code as it
is now — or an older version the model has since changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from cardrunner.agent.events import CallObserved
from cardrunner.agent.toolpool import Image, ToolContext, ToolResult
from cardrunner.card.card import put_back_body, split_card
from cardrunner.git.indexes import forget_recent
from cardrunner.git.repo import GitRepo

READ_ONLY_TOOLS = frozenset({"list_files", "read_file", "report_criterion"})
"""Tools that cannot change the write area: no snapshot is needed after them."""
MIN_QUOTE = 3
"""A quote shorter than this ("ok", "5") would be found in almost any result."""
_NOT_EVIDENCE = frozenset({"report_criterion", "git_commit"})
"""Calls that record or commit; citing them would be evidence resting on itself."""


def _flat(text: str) -> str:
    """Whitespace runs as one space: a quote may wrap differently from the result it came from."""
    return " ".join(text.split())


class AreaState(Protocol):
    """A fingerprint of the write area as it is now (equal fingerprints: the same files)."""

    async def fingerprint(self) -> str: ...


class FixedState:
    """The write area of a loop driven without a repository: nothing is tracked, so never stale."""

    async def fingerprint(self) -> str:
        return "fixed"


@dataclass
class GitAreaState:
    """The write area's fingerprint is its git tree: equal trees, byte-identical files.

    It is `git.snapshot(paths)` — HEAD's tree with the write area as it is now — taken
    incrementally: one index of our own is kept for the run (begun from the repository's own
    index, read from HEAD again only when HEAD moves, its stat data kept), so each fingerprint
    stats the write area's files and hashes only those that changed. A fresh index per
    fingerprint knew no file's stat and hashed the whole write area before and after every tool
    call (0.6 s on a 17,000-file repository)."""

    git: GitRepo
    paths: list[str]
    _index: Path | None = field(default=None, init=False)
    _head: str | None = field(default=None, init=False)

    async def fingerprint(self) -> str:
        head = await self.git.head()
        if head is None:
            return await self.git.snapshot(self.paths)
        if self._index is None:
            folder = tempfile.mkdtemp(prefix="cardrunner-area-")
            weakref.finalize(self, shutil.rmtree, folder, True)
            self._index = Path(folder) / "index"
        env = {"GIT_INDEX_FILE": str(self._index)}
        if head != self._head:  # the stat data kept: a commit does not make every file new
            await self.git.write_index(self._index, head)
            self._head = head
        await forget_recent(self.git._git, self._index, self.git._specs(self.paths))
        await self.git._add_paths(self.paths, env)
        return (await self.git._git("write-tree", env=env)).text


@dataclass(frozen=True)
class ObservedCall:
    """One finished call as the runner saw it."""

    id: str
    name: str
    arguments: Any
    text: str
    is_error: bool
    round: int
    seq: int
    before: str
    """The write area's fingerprint when the call started."""
    after: str
    """…and when it ended; a call that changed the write area has `before != after`."""
    images: tuple[Image, ...] = ()

    @property
    def changed_area(self) -> bool:
        return self.before != self.after

    def describe(self) -> str:
        """`run_tests (toolu_01, round 4)` — how messages to the model name a call."""
        return f"{self.name} ({self.id}, round {self.round})"


@dataclass
class CallLog:
    """Every call of one run by id, and the write area's fingerprint after the latest one."""

    state: AreaState
    base: str
    """The write area as the run found it (a resumed run: as it first found it)."""
    observed: InitVar[Sequence[ObservedCall]] = ()
    """The calls of the run before it was resumed, in order (from its log); none in a new run."""
    calls: dict[str, ObservedCall] = field(default_factory=dict, init=False)
    current: str = field(default="", init=False)
    last_change: ObservedCall | None = field(default=None, init=False)
    """The latest call after which the write area differed from before it."""

    def __post_init__(self, observed: Sequence[ObservedCall]) -> None:
        for call in observed:
            self.calls[call.id] = call
            if call.changed_area:
                self.last_change = call

    async def start(self) -> str:
        """Take the first fingerprint (the write area as the run starts, or resumes)."""
        self.current = await self.state.fingerprint()
        return self.current

    async def refresh(self) -> str:
        """Fingerprint the write area again now (hand edits between calls are caught here)."""
        self.current = await self.state.fingerprint()
        return self.current

    async def observe(
        self, name: str, arguments: Any, ctx: ToolContext, result: ToolResult
    ) -> None:
        before = self.current or await self.start()
        after = before if name in READ_ONLY_TOOLS else await self.state.fingerprint()
        call = ObservedCall(
            id=ctx.tool_use_id,
            name=name,
            arguments=arguments,
            text=result.text,
            is_error=result.is_error,
            round=ctx.round,
            seq=len(self.calls),
            before=before,
            after=after,
            images=tuple(result.images),
        )
        if ctx.tool_use_id:
            self.calls[ctx.tool_use_id] = call
            ctx.emit(CallObserved(tool_use_id=ctx.tool_use_id, before=before, after=after))
        self.current = after
        if call.changed_area:
            self.last_change = call

    def fresh(self, call: ObservedCall) -> bool:
        """Did the call see the write area exactly as it is now (and leave it so), after the
        last time files outside it were put back?"""
        change = self.last_change
        if change is not None and change.name == RESTORED and call.seq < change.seq:
            return False
        return call.before == call.after == self.current

    def outside_restored(self, paths: Sequence[str], round_: int) -> None:
        """Files outside the write area were put back: every call made so far saw a tree that
        is not the one a commit holds, so none of them counts any more."""
        self.last_change = ObservedCall(
            id="restore",
            name=RESTORED,
            arguments={"paths": list(paths)},
            text="",
            is_error=False,
            round=round_,
            seq=len(self.calls),
            before=self.current,
            after=self.current,
        )

    def recent(self, limit: int = 8) -> list[ObservedCall]:
        """The latest calls, newest last (to tell the model which ids exist)."""
        return sorted(self.calls.values(), key=lambda c: c.seq)[-limit:]

    def cite_problem(self, call_id: str, quote: str, passed: bool) -> str | None:
        """What is wrong with citing `quote` from call `call_id` as evidence, in one sentence
        to the model; None when the call is this run's, holds the quote and saw the code now."""
        call = self.calls.get(call_id)
        if call is None:
            known = ", ".join(c.describe() for c in self.recent()) or "none yet"
            return f"{call_id!r} is not a tool call of this run (latest calls: {known})"
        if call.name in _NOT_EVIDENCE:
            return (
                f"{call.describe()} records or commits; cite the calls that observed the behaviour"
            )
        if passed and call.is_error:
            return f"{call.describe()} returned an error; it cannot show that a criterion holds"
        if len(_flat(quote)) < MIN_QUOTE:
            return f"the quote {quote!r} from {call.describe()} is too short to identify anything"
        if _flat(quote) not in _flat(call.text):
            return (
                f"the quote {quote!r} does not appear in the result of {call.describe()}; "
                "copy the text exactly as the tool returned it"
            )
        return None if self.fresh(call) else self._stale_problem(call)

    def _stale_problem(self, call: ObservedCall) -> str:
        if call.changed_area:
            return f"{call.describe()} changed the code itself; cite a call made after it"
        after = f" ({self.last_change.describe()})" if self.last_change else ""
        return (
            f"{call.describe()} ran before the last change to the write area{after}; "
            "run it again and cite the new call"
        )


RESTORED = "the runner's restore of files outside the write area"


@dataclass
class CardWatch:
    """The card being run, below its front matter, as the run found it.

    cardrunner writes the front matter (the state, the run's record); the Markdown below it is
    what the run is judged by. The model's tools cannot write it (`PathGuard`), and the sandbox
    mounts the cards read-only for builds; a build run without the sandbox still could. So the
    commit and the verdict look: a changed card is put back, and the run cannot end Done."""

    path: Path
    rel: str
    whole: str
    body: str
    tampered: bool = False

    @classmethod
    def take(cls, path: Path, root: Path) -> CardWatch:
        text = path.read_text(encoding="utf-8")
        real = path.resolve()
        rel = (
            real.relative_to(root.resolve()).as_posix()
            if real.is_relative_to(root.resolve())
            else str(path)
        )
        return cls(path, rel, text, split_card(text)[1])

    def changed(self) -> bool:
        """True once the card's body changed during the run (each change is put back)."""
        try:
            now = split_card(self.path.read_text(encoding="utf-8"))[1]
        except (OSError, UnicodeDecodeError):
            now = None
        if now != self.body:
            self.tampered = True
            put_back_body(self.path, self.body, self.whole)
        return self.tampered


@dataclass
class OutsideWatch:
    """The tracked files outside the write area, as the run found them.

    Only tracked files are watched: new untracked files are what builds and tests leave
    (caches, `__pycache__`), and the runner's own checks run in a checkout of exactly the tree a
    commit holds (`RunnerChecks.run_exact`), where no such file is."""

    git: GitRepo
    write: list[str]
    exempt: tuple[str, ...]
    """What cardrunner itself writes outside the write area: the cards."""
    start: dict[str, str] = field(default_factory=dict)
    """Files outside the write area that differed from HEAD at the start: their content's hash."""
    card: CardWatch | None = None
    """The card being run: its body is never the run's to change, wherever it lies."""

    @classmethod
    async def take(
        cls, git: GitRepo, write: list[str], exempt: Sequence[str], card: Path | None = None
    ) -> OutsideWatch:
        watched = None if card is None else await asyncio.to_thread(CardWatch.take, card, git.root)
        watch = cls(git, write, tuple(exempt), card=watched)
        for path in await watch._dirty():
            watch.start[path] = await asyncio.to_thread(_digest, git.root / path)
        return watch

    def _outside(self, path: str) -> bool:
        here = PurePosixPath(path)
        return not any(
            p in (".", "") or here == PurePosixPath(p) or here.is_relative_to(p)
            for p in (*self.write, *self.exempt)
        )

    async def _dirty(self) -> list[str]:
        return [p for p in await self.git.dirty_files(["."], untracked=False) if self._outside(p)]

    async def changed(self) -> list[str]:
        """Tracked files outside the write area that differ from how the run found them."""
        now = await self._dirty()
        moved = [p for p in now if p not in self.start]
        if self.card is not None and await asyncio.to_thread(self.card.changed):
            moved.append(self.card.rel)  # already put back: the run's own card
        for path, digest in self.start.items():
            if await asyncio.to_thread(_digest, self.git.root / path) != digest:
                moved.append(path)
        return sorted(set(moved))

    async def restore(self, paths: Sequence[str]) -> list[str]:
        """Put back, from HEAD, the files that were as HEAD has them at the start; those the
        user had changed before the run cannot be put back and are returned."""
        kept = []
        for path in paths:
            if self.card is not None and path == self.card.rel:
                continue  # put back when it was found changed
            if path in self.start:
                kept.append(path)
                continue
            data = await self.git.show_file("HEAD", path)
            if data is not None:
                target = self.git.root / path
                await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
                await asyncio.to_thread(target.write_bytes, data)
        return kept


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""
