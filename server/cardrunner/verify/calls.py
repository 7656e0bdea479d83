"""The runner's own record of every tool call: what it returned and on which state of the code.

Evidence is only worth something if it can be checked. So the runner keeps, per call the model
made, the exact text the model got back and a fingerprint of the write area before and after it
(a git tree id). A criterion's evidence may then cite calls by id, and the runner can tell
whether the quoted text is really in that call's result and whether the call saw the code as it
is now — or an older version the model has since changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

from cardrunner.agent.events import CallObserved
from cardrunner.agent.toolpool import Image, ToolContext, ToolResult
from cardrunner.git.repo import GitRepo

READ_ONLY_TOOLS = frozenset({"list_files", "read_file", "report_criterion"})
"""Tools that cannot change the write area: no snapshot is needed after them."""


class AreaState(Protocol):
    """A fingerprint of the write area as it is now (equal fingerprints: the same files)."""

    async def fingerprint(self) -> str: ...


class FixedState:
    """The write area of a loop driven without a repository: nothing is tracked, so never stale."""

    async def fingerprint(self) -> str:
        return "fixed"


@dataclass(frozen=True)
class GitAreaState:
    """The write area's fingerprint is its git tree: equal trees, byte-identical files."""

    git: GitRepo
    paths: list[str]

    async def fingerprint(self) -> str:
        return await self.git.snapshot(self.paths)


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
        """Did the call see the write area exactly as it is now (and leave it so)?"""
        return call.before == call.after == self.current

    def recent(self, limit: int = 8) -> list[ObservedCall]:
        """The latest calls, newest last (to tell the model which ids exist)."""
        return sorted(self.calls.values(), key=lambda c: c.seq)[-limit:]
