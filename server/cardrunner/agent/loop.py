"""The agent loop: ask the model, run the tools it asks for, feed the results back, repeat.

It yields typed events and does nothing else: no printing, no files, no editor. Limits are checked
before every model call; every end — success, a limit, an API error, cancellation by the consumer —
yields exactly one `RunFinished` carrying its reason.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from cardrunner.agent.compaction import Compactor
from cardrunner.agent.events import (
    Event,
    FailureReason,
    ReviewDecided,
    RoundFinished,
    RoundStarted,
    RunFinished,
    ToolFinished,
    ToolStarted,
)
from cardrunner.agent.gate import ToolContext, ToolPool, ToolResult
from cardrunner.agent.limits import Guards, Stop
from cardrunner.agent.model import Block, Message, Model, ModelError, ModelRequest
from cardrunner.config.settings import ModelOptions
from cardrunner.tools.evidence import Evidence

RESULT_LINE = re.compile(r"^RESULT:\s*(?:(done)|failed(?::\s*(.*))?)\s*$")


@dataclass
class Loop:
    """Everything one run of the loop needs; the conversation is mutated in place."""

    system: str
    model: Model
    pool: ToolPool
    guards: Guards
    evidence: Evidence
    options: ModelOptions
    messages: list[Message]
    require_evidence: bool = True
    compactor: Compactor | None = None
    last_review: str | None = field(default=None, init=False)
    commit: str | None = field(default=None, init=False)

    async def run(self) -> AsyncGenerator[Event, None]:
        """Play rounds until the model ends, a limit is reached or the consumer cancels."""
        g = self.guards
        while True:
            if stop := g.check_before_request():
                yield self.finish("failed", stop.reason, stop.detail)
                return
            if self.compactor:
                for compacted in self.compactor.compact(self.messages):
                    yield compacted
            yield RoundStarted(round=g.rounds + 1, max_rounds=self.guards.limits.max_rounds)
            started = time.monotonic()
            try:
                response = await self.model.respond(self.request())
            except ModelError as exc:
                yield self.finish("failed", "api_error", str(exc))
                return
            self.messages.append(Message("assistant", response.content))
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
                text=_text(response.content),
                total_usage=g.usage,
                total_cost_usd=g.cost_usd,
                response=response.content,
            )
            match response.stop_reason:
                case "tool_use" if calls:
                    stop = None
                    results: list[Block] = []
                    async for item in self._run_calls(calls):
                        if isinstance(item, Stop):
                            stop = stop or item
                        elif isinstance(item, dict):
                            results.append(item)
                        else:
                            yield item
                    self.messages.append(Message("user", results))
                    if stop:
                        yield self.finish("failed", stop.reason, stop.detail)
                        return
                case "pause_turn":
                    self.messages.append(Message("user", [{"type": "text", "text": "Continue."}]))
                case "end_turn" | "stop_sequence":
                    yield self.conclude(_text(response.content))
                    return
                case "max_tokens":
                    yield self.finish("failed", "truncated", "the answer hit max_tokens")
                    return
                case "refusal":
                    yield self.finish("failed", "refusal", _text(response.content)[-300:])
                    return
                case other:
                    yield self.finish("failed", "api_error", f"unexpected stop_reason {other!r}")
                    return

    def request(self) -> ModelRequest:
        o = self.options
        return ModelRequest(
            system=self.system,
            tools=self.pool.specs(),
            messages=self.messages,
            max_tokens=o.max_output_tokens,
            thinking=o.thinking,
            effort=o.effort,
            cache=o.cache,
        )

    async def _run_calls(self, calls: list[Block]) -> AsyncIterator[Event | Block | Stop]:
        """Run every call of one turn in order; yield events, then one tool_result per call."""
        notice = self.guards.wrap_up_notice()
        for call in calls:
            name, args, use_id = call["name"], call.get("input", {}), call["id"]
            yield ToolStarted(
                round=self.guards.rounds, tool_use_id=use_id, name=name, arguments=args
            )
            started = time.monotonic()
            result = ToolResult("")
            async for item in _with_events(self.pool, name, args, self.guards.rounds):
                if isinstance(item, ToolResult):
                    result = item
                else:
                    self._note(item)
                    yield item
            text = (result.text or "(no output)") + (f"\n{notice}" if notice else "")
            yield ToolFinished(
                round=self.guards.rounds,
                tool_use_id=use_id,
                name=name,
                arguments=args,
                ms=int((time.monotonic() - started) * 1000),
                result=text,
                is_error=result.is_error,
            )
            yield tool_result_block(use_id, text, result)
            if stop := self.guards.after_tool(name, args, result.text, result.is_error):
                yield stop

    def _note(self, event: Event) -> None:
        if isinstance(event, ReviewDecided):
            self.last_review = event.decision
            self.commit = event.commit or self.commit

    def conclude(self, text: str) -> RunFinished:
        """Read the RESULT contract from the final answer."""
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        match = RESULT_LINE.match(lines[-1]) if lines else None
        if match is None:
            return self.finish(
                "failed", "no_result_line", "the final answer has no RESULT line", text
            )
        if not match.group(1):
            reason: FailureReason = "rejected" if self.last_review == "reject" else "model_failed"
            return self.finish("failed", reason, match.group(2) or "the model gave no reason", text)
        if self.last_review == "reject":
            return self.finish("failed", "rejected", "the last review rejected the changes", text)
        if self.require_evidence and (missing := self.evidence.missing()):
            detail = f"done was claimed without passing evidence for criteria {missing}"
            return self.finish("failed", "unverified", detail, text)
        return self.finish("done", None, "", text)

    def finish(
        self,
        status: Literal["done", "failed"],
        reason: FailureReason | None,
        detail: str,
        text: str = "",
    ) -> RunFinished:
        g = self.guards
        return RunFinished(
            status=status,
            reason=reason,
            detail=detail,
            rounds=g.rounds,
            tool_calls=g.tool_calls,
            input_tokens=g.usage.input_tokens,
            output_tokens=g.usage.output_tokens,
            cache_read_input_tokens=g.usage.cache_read_input_tokens,
            cache_creation_input_tokens=g.usage.cache_creation_input_tokens,
            cost_usd=round(g.cost_usd, 6),
            commit=self.commit,
            final_text=text,
        )


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


async def _with_events(
    pool: ToolPool, name: str, args: Any, round_no: int
) -> AsyncIterator[Event | ToolResult]:
    """Run one call, yielding the events the tool emits while it runs, then its result."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    task = asyncio.ensure_future(pool.execute(name, args, ToolContext(round_no, queue.put_nowait)))
    try:
        while not task.done():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
            else:
                getter.cancel()
        while not queue.empty():
            yield queue.get_nowait()
        yield task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _text(content: list[Block]) -> str:
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text").strip()
