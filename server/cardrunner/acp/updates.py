"""A run's typed events as ACP session updates, one event at a time, as the run goes.

One `match` over the event union with `assert_never`, like the log's account: a new event kind
fails the type check here until it is mapped. The criteria are the session's plan; ACP has no
"update one entry", so the whole plan is resent whenever an entry changes. The model's text is
its narration (message chunks), its thinking the thought chunks; the runner's own remarks
(notices, objections, the review's outcome, the result) are message chunks too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from acp import plan_entry, update_agent_message_text, update_agent_thought_text, update_plan
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanEntryStatus,
    ToolCallProgress,
    ToolCallStart,
)

from cardrunner.acp.toolcalls import ToolCalls, checks_call
from cardrunner.agent import events as ev
from cardrunner.agent.ledger import LedgerEntry
from cardrunner.card.record import usd

SessionUpdate = (
    AgentMessageChunk | AgentThoughtChunk | AgentPlanUpdate | ToolCallStart | ToolCallProgress
)


def say(text: str) -> AgentMessageChunk:
    """One paragraph of the agent's message (chunks are joined as they come)."""
    return update_agent_message_text(text.rstrip() + "\n\n")


@dataclass
class Plan:
    """The criteria as plan entries: completed once evidence for them is accepted."""

    criteria: list[str] = field(default_factory=list)
    status: list[PlanEntryStatus] = field(default_factory=list)

    def start(self, criteria: list[str]) -> AgentPlanUpdate:
        self.criteria, self.status = list(criteria), ["pending"] * len(criteria)
        return self.update()

    def update(self) -> AgentPlanUpdate:
        return update_plan(
            plan_entry(text, priority="high", status=status)
            for text, status in zip(self.criteria, self.status, strict=True)
        )

    def working(self) -> list[AgentPlanUpdate]:
        """The first open criterion is in progress (none is while the model has not begun)."""
        if "in_progress" in self.status or "pending" not in self.status:
            return []
        self.status[self.status.index("pending")] = "in_progress"
        return [self.update()]

    def reported(self, event: ev.CriterionReported) -> list[AgentPlanUpdate]:
        if not 0 <= event.index < len(self.status) or not event.passed:
            return []
        self.status[event.index] = "completed"
        if "in_progress" not in self.status:
            self.working()
        return [self.update()]

    def ended(self, ledger: list[LedgerEntry]) -> list[AgentPlanUpdate]:
        """At the end the ledger says what holds: only verified criteria stay completed."""
        held = {e.index for e in ledger if e.status == "verified"}
        final: list[PlanEntryStatus] = [
            "completed" if i in held else "pending" for i in range(len(self.status))
        ]
        if final == self.status:
            return []
        self.status = final
        return [self.update()]


def _round(event: ev.RoundFinished) -> list[SessionUpdate]:
    """The model's thinking, then its narration, in the order it gave them."""
    blocks = event.response or [{"type": "text", "text": event.text}]
    out: list[SessionUpdate] = []
    for block in blocks:
        if block.get("type") == "thinking" and (thought := str(block.get("thinking") or "")):
            out.append(update_agent_thought_text(thought.rstrip() + "\n\n"))
        elif block.get("type") == "text" and (text := str(block.get("text") or "")).strip():
            out.append(say(text))
    return out


def _ended(event: ev.RunFinished, replayed: bool) -> str:
    if event.status == "done":
        how = "done"
    elif event.status == "verified":
        how = f"verified, {(event.outcome or 'not_committed').replace('_', ' ')}"
    else:
        how = f"failed: {event.reason}"
    detail = f" — {event.detail}" if event.detail else ""
    commit = f" · commit {event.commit[:10]}" if event.commit else ""
    branch = f" · on branch {event.unmerged_branch}" if event.unmerged_branch else ""
    return (
        f"**{how.upper()}**{detail} · {event.rounds} rounds · {event.tool_calls} tool calls · "
        f"{usd(event.cost_usd, 4, estimate=event.usage.estimated or replayed)}{commit}{branch}"
    )


@dataclass
class RunUpdates:
    """Folds one run's events into the updates a client is sent."""

    root: Path
    plan: Plan = field(default_factory=Plan)
    calls: ToolCalls | None = None
    checks: int = 0
    replayed: bool = False
    """Played from a transcript: its cost is an estimate, said as every view says it."""

    def _tools(self) -> ToolCalls:
        if self.calls is None:
            self.calls = ToolCalls(self.root)
        return self.calls

    def updates(self, event: ev.Event) -> list[SessionUpdate]:
        match event:
            case ev.RunStarted():
                self.calls = ToolCalls(Path(event.workdir) if event.workdir else self.root)
                self.replayed = event.model.startswith("replay:")  # as RunState.replayed
                resumed = (
                    f", resumed after round {event.resumed_from_round}"
                    if event.resumed_from_round
                    else ""
                )
                head = say(f"Running **{event.title}** ({event.card}, {event.model}{resumed}).")
                return [head, self.plan.start(event.criteria)]
            case ev.RoundStarted():
                return [*self.plan.working()]
            case ev.RoundFinished():
                return _round(event)
            case ev.ToolStarted():
                return [*self._tools().started(event)]
            case ev.ToolOutput():
                return [*self._tools().output(event)]
            case ev.ToolFinished():
                return [*self._tools().finished(event)]
            case ev.CriterionReported():
                return [*self.plan.reported(event)]
            case ev.ChecksRan():
                self.checks += 1
                return [checks_call(self.checks, event)]
            case ev.GateObjected():
                return [say(f"The runner objected (attempt {event.attempt}): {event.message}")]
            case ev.ReviewDecided():
                commit = f", committed {event.commit[:10]}" if event.commit else ""
                why = f": {event.reason}" if event.reason else ""
                return [say(f"Review: {event.decision}{commit}{why}")]
            case ev.Compacted():
                kept = f"{event.tokens_before:,} → {event.tokens_after:,} tokens"
                return [update_agent_thought_text(f"(context compacted: {kept})\n\n")]
            case ev.Notice():
                return [say(f"{event.level}: {event.message}")]
            case ev.RunFinished():
                return [*self.plan.ended(event.ledger), say(_ended(event, self.replayed))]
            case ev.CallObserved() | ev.BuildChecked() | ev.ReviewRequested() | ev.Announced():
                return []  # the tool call, the permission request, the model's own turn show these
            case _:
                assert_never(event)
