"""Helpers for driving the loop directly with a scripted model and small real tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.events import Event, RunFinished
from cardrunner.agent.limits import Guards
from cardrunner.agent.loop import Loop
from cardrunner.agent.model import Message
from cardrunner.agent.toolpool import ToolContext, ToolError, ToolResult
from cardrunner.config.model_table import Price
from cardrunner.config.settings import Limits, ModelOptions
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.verdict import EvidenceVerdict
from cardrunner.tools.base import FunctionTool, schema
from cardrunner.tools.evidence import Evidence
from cardrunner.verify.calls import CallLog, FixedState


def use(name: str, _id: str | None = None, **args: Any) -> dict[str, Any]:
    """A tool call; `_id` fixes its tool_use id so evidence can cite it."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": args}
    if _id:
        block["id"] = _id
    return block


def cite(call: str, quote: str) -> dict[str, str]:
    return {"call": call, "quote": quote}


def report_last(number: int = 1, chars: int = 12) -> Any:
    """A step reporting criterion `number` (from 1) as passed, citing the latest successful tool result.

    The quote is the start of that result exactly as the loop sent it, so the evidence is
    grounded by construction, whatever ran before.
    """

    def step(body: dict[str, Any], _: int) -> dict[str, Any]:
        results = [
            b
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result" and not b.get("is_error")
        ]
        last = results[-1]
        text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        report = use(
            "report_criterion",
            index=number,
            passed=True,
            evidence="saw it work",
            cites=[cite(last["tool_use_id"], text[:chars])],
        )
        return calls(report)

    return step


def say(text: str, stop: str = "end_turn", usage: dict[str, int] | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"content": [{"type": "text", "text": text}], "stop_reason": stop}
    if usage:
        step["usage"] = usage
    return step


def calls(
    *blocks: dict[str, Any], usage: dict[str, int] | None = None, think: bool = False
) -> dict[str, Any]:
    content = list(blocks)
    if think:
        content.insert(0, {"type": "thinking", "thinking": "plan the next step"})
    step: dict[str, Any] = {"content": content, "stop_reason": "tool_use"}
    if usage:
        step["usage"] = usage
    return step


def echo_tool() -> FunctionTool:
    async def fn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(f"echo: {args['text']}")

    return FunctionTool(
        "echo", "Echo text back.", schema({"text": {"type": "string"}}, ["text"]), fn
    )


def failing_tool(message: str = "it broke") -> FunctionTool:
    async def fn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise ToolError(f"{message} {args.get('n', '')}".strip())

    return FunctionTool("fail", "Always fails.", schema({"n": {"type": "integer"}}), fn)


def crashing_tool() -> FunctionTool:
    async def fn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("unexpected crash")

    return FunctionTool("crash", "Raises.", schema(), fn)


def hanging_tool() -> FunctionTool:
    async def fn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await asyncio.Event().wait()
        return ToolResult("never")

    return FunctionTool("hang", "Never returns.", schema(), fn, timeout=0.2)


def big_tool(size: int = 9000) -> FunctionTool:
    async def fn(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(f"{args.get('tag', '')}" + "x" * size)

    return FunctionTool("big", "Big output.", schema({"tag": {"type": "string"}}), fn)


LoopFactory = Callable[..., tuple[Loop, ScriptedModel]]


@pytest.fixture
def make_loop(tmp_path: Path) -> LoopFactory:
    def factory(
        steps: list[Any],
        *,
        criteria: list[str] | None = None,
        limits: Limits | None = None,
        price: Price | None = None,
        tools: list[FunctionTool] | None = None,
        require_evidence: bool = True,
        max_objections: int = 2,
        options: ModelOptions | None = None,
        clock: Callable[[], float] | None = None,
        compactor: Any = None,
        api_model: str | None = None,
        output_ceiling: int | None = None,
    ) -> tuple[Loop, ScriptedModel]:
        from cardrunner.agent.toolpool import ToolPool

        model = ScriptedModel(steps, api_model=api_model)
        log = CallLog(FixedState(), "fixed")
        evidence = Evidence(
            criteria if criteria is not None else ["the thing works"],
            log,
            True,
            tmp_path / "evidence",
            tmp_path,
        )
        pool = ToolPool(
            [
                *(tools or [echo_tool(), failing_tool(), crashing_tool(), hanging_tool()]),
                evidence.tool(),
            ],
            observers=[log],
        )
        guards = (
            Guards(limits or Limits(), price, clock=clock)
            if clock
            else Guards(limits or Limits(), price)
        )
        loop = Loop(
            system="You are a test.",
            model=model,
            pool=pool,
            guards=guards,
            verdict=EvidenceVerdict(evidence, require_evidence, max_objections=max_objections),
            options=options or ModelOptions(),
            messages=[Message("user", [{"type": "text", "text": "THE CARD: do it"}])],
            compactor=compactor,
            output_ceiling=output_ceiling,
        )
        return loop, model

    return factory


async def drain(loop: Loop) -> tuple[list[Event], RunFinished]:
    events = [e async for e in loop.run()]
    assert isinstance(events[-1], RunFinished), events[-1]
    assert sum(isinstance(e, RunFinished) for e in events) == 1
    return events, events[-1]
