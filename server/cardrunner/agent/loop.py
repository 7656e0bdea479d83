"""The agent loop: ask the model, run the tools it asks for, feed the results back, repeat.

It yields typed events and does nothing else: no printing, no files, no editor. Limits are checked
before every model call; every end — success, a limit, an API error, cancellation by the consumer —
yields exactly one `RunFinished` carrying its reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from cardrunner.agent.compaction import Compactor
from cardrunner.agent.events import (
    Announced,
    Event,
    GateObjected,
    Notice,
    RoundFinished,
    RoundStarted,
    RunFinished,
    ToolFinished,
    ToolStarted,
)
from cardrunner.agent.limits import CallRecord, Guards
from cardrunner.agent.model import (
    Block,
    Message,
    Model,
    ModelError,
    ModelRequest,
    WindowExceeded,
)
from cardrunner.agent.recovery import Recovery
from cardrunner.agent.review import Objection, Outcome, Verdict
from cardrunner.agent.toolpool import ToolContext, ToolPool, ToolResult
from cardrunner.card.record import FailureReason
from cardrunner.config.settings import ModelOptions

UNFITTED_OUTPUT_TOKENS = 16_000
"""`max_tokens` when the options were not fitted to a model (`Settings.effective_options`)."""


@dataclass(frozen=True)
class CallOutcome:
    """One finished tool call: the block the model gets back, and what the guards judge."""

    block: Block
    record: CallRecord
    announce: str = ""


@dataclass
class Loop:
    """Everything one run of the loop needs; the conversation is mutated in place."""

    system: str
    model: Model
    pool: ToolPool
    guards: Guards
    verdict: Verdict
    options: ModelOptions
    messages: list[Message]
    compactor: Compactor | None = None
    tools: list[dict[str, Any]] | None = None
    """`tools` as sent on every request; taken from the pool once when not given (a resume
    gives the run's own). Never rebuilt mid-run: it is part of every thinking block's prefix."""
    system_messages: bool = False
    """Whether the model takes role `system` entries in `messages` (the 5.5 models do)."""

    output_ceiling: int | None = None
    """The model's largest output; a cut-off answer raises the limit towards it."""
    recovery: Recovery = field(init=False)
    _force_compaction: bool = field(default=False, init=False)
    _window_retried: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.tools is None:
            self.tools = self.pool.specs()
        limit = self.options.max_output_tokens or UNFITTED_OUTPUT_TOKENS
        self.recovery = Recovery(limit, max(limit, self.output_ceiling or limit))

    async def run(self) -> AsyncGenerator[Event, None]:
        """Play rounds until the model ends, a limit is reached or the consumer cancels."""
        g = self.guards
        while True:
            if stop := g.check_before_request():
                yield self.finish("failed", stop.reason, stop.detail)
                return
            if self.compactor:
                for compacted in self.compactor.compact(self.messages, self._force_compaction):
                    yield compacted
                self._force_compaction = False
            yield RoundStarted(round=g.rounds + 1, max_rounds=self.guards.limits.max_rounds)
            started = time.monotonic()
            try:
                response = await self.model.respond(self.request())
            except WindowExceeded as exc:
                if self.compactor is None or self._window_retried:  # compacted once already
                    yield self.finish("failed", "api_error", str(exc))
                    return
                self._window_retried = self._force_compaction = True
                yield Notice(level="warning", message=f"{exc}; compacting and trying again")
                continue
            except ModelError as exc:
                if exc.said:  # the endpoint's own words, whole, for the log
                    yield Notice(level="warning", message=f"the endpoint said: {exc.said}")
                yield self.finish("failed", "api_error", str(exc))
                return
            self._window_retried = False
            if response.transformations:
                yield dropped_notice(response.transformations)
            self.messages.append(Message("assistant", response.content))
            if response.usage.estimated and not g.usage.estimated:
                yield estimate_notice(self.model.name)
            cost = g.add_round(response.usage)
            calls = [b for b in response.content if b.get("type") == "tool_use"]
            yield RoundFinished(
                round=g.rounds,
                max_rounds=g.limits.max_rounds,
                ms=int((time.monotonic() - started) * 1000),
                usage=response.usage,
                cost_usd=cost,
                stop_reason=response.stop_reason,
                calls=[c["name"] for c in calls],
                text=shown_text(response.content),
                total_usage=g.usage,
                total_cost_usd=g.cost_usd,
                response=response.content,
            )
            async for event in self._after(response.stop_reason, response.content, calls):
                yield event
                if isinstance(event, RunFinished):
                    return

    async def _after(
        self, stop_reason: str | None, content: list[Block], calls: list[Block]
    ) -> AsyncIterator[Event]:
        """What a response's stop reason asks for; a `RunFinished` among the events ends the run."""
        g = self.guards
        match stop_reason:
            case "tool_use" if calls:
                self.recovery.answered()
                outcomes: list[CallOutcome] = []
                async for event in self._run_calls(calls, outcomes.append):
                    yield event
                self.messages.append(Message("user", [o.block for o in outcomes]))
                if told := " ".join(o.announce for o in outcomes if o.announce):
                    yield self.announce(f"[cardrunner: {told}]")
                if stop := g.after_round([o.record for o in outcomes]):
                    yield self.finish("failed", stop.reason, stop.detail)
            case "pause_turn":
                self.messages.append(Message("user", [{"type": "text", "text": "Continue."}]))
            case "end_turn" | "stop_sequence":
                judged = self.verdict.judge(_text(content))
                if isinstance(judged, Objection):  # told what is missing: the run goes on
                    yield self.object(judged)
                else:
                    yield self.conclude(judged, _text(content))
            case "max_tokens" | "model_context_window_exceeded" if self._recoverable(stop_reason):
                async for event in self._cut_off(calls, stop_reason == "max_tokens"):
                    yield event
            case "max_tokens":
                yield self.finish("failed", "truncated", "the answer hit max_tokens")
            case "model_context_window_exceeded":
                detail = "the conversation outgrew the context window and compaction could not help"
                yield self.finish("failed", "api_error", detail)
            case "refusal":
                yield self.finish("failed", "refusal", _text(content)[-300:])
            case other:
                yield self.finish("failed", "api_error", f"unexpected stop_reason {other!r}")

    def _recoverable(self, stop_reason: str | None) -> bool:
        window = stop_reason == "model_context_window_exceeded"
        return self.recovery.can_continue() and (self.compactor is not None or not window)

    async def _cut_off(self, calls: list[Block], output: bool) -> AsyncIterator[Event]:
        """Answer the cut-off turn's calls "not run" (logged, so a resume sends the same), then
        tell the model; the next request has a larger limit or a compacted conversation."""
        results: list[Block] = []
        for call in calls:
            text = self.recovery.not_run(call)
            yield ToolFinished(
                round=self.guards.rounds,
                tool_use_id=call["id"],
                name=call["name"],
                arguments=call.get("input", {}),
                ms=0,
                result=text,
                is_error=True,
            )
            results.append(tool_result_block(call["id"], text, ToolResult(text, is_error=True)))
        if results:
            self.messages.append(Message("user", results))
        self._force_compaction = not output
        note = self.recovery.note(window=not output)
        if results:
            yield self.announce(note)
        else:
            yield self.announce_as_user(note)

    def announce(self, text: str) -> Announced:
        """Tell the model `text` in a new message at the end, never by editing what was sent."""
        event = Announced(text=text, as_system=self.system_messages)
        add_announcement(self.messages, event)
        return event

    def announce_as_user(self, text: str) -> Announced:
        """After an assistant turn with no calls, the note is the next user message."""
        event = Announced(text=text, as_system=False)
        add_announcement(self.messages, event)
        return event

    def request(self) -> ModelRequest:
        o = self.options
        return ModelRequest(
            system=self.system,
            tools=self.tools or [],
            messages=self.messages,
            max_tokens=self.recovery.limit,
            thinking=o.thinking,
            effort=o.effort,
            cache=o.cache,
            display=o.thinking_display,
            drop_mismatched_thinking=o.drop_mismatched_thinking,
            time_left=self.guards.time_left(),
        )

    async def _run_calls(
        self, calls: list[Block], done: Callable[[CallOutcome], None]
    ) -> AsyncIterator[Event]:
        """Run every call of one turn in order, yielding their events; `done` gets each outcome."""
        notice = self.guards.wrap_up_notice()
        queue: asyncio.Queue[Event] = asyncio.Queue()
        for call in calls:
            name, args, use_id = call["name"], call.get("input", {}), call["id"]
            yield ToolStarted(
                round=self.guards.rounds, tool_use_id=use_id, name=name, arguments=args
            )
            started = time.monotonic()
            call_task = asyncio.ensure_future(
                self.pool.execute(
                    name, args, ToolContext(self.guards.rounds, queue.put_nowait, use_id)
                )
            )
            async for event in _events_while(call_task, queue):
                yield event
            result = call_task.result()
            text = (result.text or "(no output)") + (f"\n{notice}" if notice else "")
            block = tool_result_block(use_id, text, result)
            sent = block["content"]
            yield ToolFinished(
                round=self.guards.rounds,
                tool_use_id=use_id,
                name=name,
                arguments=args,
                ms=int((time.monotonic() - started) * 1000),
                result=text,
                is_error=result.is_error,
                content=sent if isinstance(sent, list) else None,
            )
            record = CallRecord(name, args, result.text, result.is_error)
            done(CallOutcome(block, record, result.announce))

    def object(self, objection: Objection) -> GateObjected:
        """Done was claimed too early: tell the model what is missing; the run goes on."""
        self.messages.append(Message("user", [{"type": "text", "text": objection.message}]))
        return GateObjected(
            attempt=objection.attempt,
            max_attempts=objection.max_attempts,
            reason=objection.reason,
            message=objection.message,
        )

    def conclude(self, outcome: Outcome, text: str) -> RunFinished:
        """End with what the verdict made of the final answer."""
        return self.finish(outcome.status, outcome.reason, outcome.detail, text, outcome.outcome)

    def finish(
        self,
        status: Literal["done", "verified", "failed"],
        reason: FailureReason | None,
        detail: str,
        text: str = "",
        outcome: Literal["committed", "not_committed", "nothing_to_change"] | None = None,
    ) -> RunFinished:
        g = self.guards
        return RunFinished(
            status=status,
            reason=reason,
            detail=detail,
            rounds=g.rounds,
            tool_calls=g.tool_calls,
            usage=g.usage,
            cost_usd=round(g.cost_usd, 6),
            commit=self.verdict.commit,
            final_text=text,
            outcome=outcome,
            ledger=self.verdict.ledger(),
        )


def add_announcement(messages: list[Message], event: Announced) -> None:
    """Append `event` to the conversation: its own system message, or text after the results."""
    block: Block = {"type": "text", "text": event.text}
    if event.as_system:
        messages.append(Message("system", [block]))
    elif messages[-1].role == "user":
        messages[-1].content.append(block)
    else:  # after an assistant turn without calls: the next user message
        messages.append(Message("user", [block]))


def tool_result_block(use_id: str, text: str, result: ToolResult) -> Block:
    """The `tool_result` block for one call: plain text, plus images when the tool made any."""
    content: Any = text
    if result.images:
        content = [{"type": "text", "text": text}] + [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": i.media_type, "data": i.data},
            }
            for i in result.images
        ]
    block: Block = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    if result.is_error:
        block["is_error"] = True
    return block


async def _events_while(
    task: asyncio.Future[ToolResult], queue: asyncio.Queue[Event]
) -> AsyncIterator[Event]:
    """The events a running tool emits, as they come, until its call has finished."""
    try:
        while not task.done():
            getter: asyncio.Future[Event] = asyncio.ensure_future(queue.get())
            waiting: set[asyncio.Future[Any]] = {task, getter}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
            else:
                getter.cancel()
        while not queue.empty():
            yield queue.get_nowait()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def shown_text(content: list[Block]) -> str:
    """What the user should read of a turn: its text, else its thinking (on the 5.x models the
    text between tool calls arrives as summarized thinking blocks)."""
    return (
        _text(content)
        or "\n".join(b.get("thinking", "") for b in content if b.get("type") == "thinking").strip()
    )


def _text(content: list[Block]) -> str:
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text").strip()


def estimate_notice(model: str) -> Notice:
    """The endpoint's usage report was missing or implausibly low: from here on the run's
    tokens and cost are cardrunner's own count, and every view says "estimate"."""
    return Notice(
        level="warning",
        message=f"the endpoint of {model} reported no usage, or far less than was sent: the "
        "run's tokens and cost are cardrunner's estimate from what it sent, not a measurement",
    )


def dropped_notice(transformations: list[dict[str, Any]]) -> Notice:
    """The API changed the conversation before answering (`drop_block`): the user should know,
    since the model answered without thinking it had before (it costs tokens and quality)."""
    where = ", ".join(str(t.get("path", "?")) for t in transformations[:5])
    more = f" and {len(transformations) - 5} more" if len(transformations) > 5 else ""
    kinds = sorted({str(t.get("type", "?")) for t in transformations})
    return Notice(
        level="warning",
        message=f"the API dropped {len(transformations)} block(s) of the conversation before "
        f"answering ({', '.join(kinds)}: {where}{more}); the model no longer sees that thinking",
    )
