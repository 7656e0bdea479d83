"""One numbering: the model counts criteria as the card lists them, from 1, and every answer the
runner gives it about one uses that number; a run that began when the tool counted from 0 keeps
counting as its model was told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cardrunner.agent.events import CriterionReported, Event
from cardrunner.agent.toolpool import ToolContext, ToolResult
from cardrunner.tools.evidence import Evidence, EvidenceSoFar, numbered_from
from cardrunner.verify.calls import CallLog, FixedState
from tests.unit.agent.conftest import LoopFactory, calls, cite, drain, say, use

SAW = "the thing works"


def reported(number: int, call: str = "toolu_echo") -> dict[str, Any]:
    return use(
        "report_criterion", passed=True, evidence="seen", index=number, cites=[cite(call, SAW)]
    )


def results(request: dict[str, Any]) -> list[tuple[bool, str]]:
    """(is_error, text) of each tool result the request answers."""
    blocks = request["messages"][-1]["content"]
    return [
        (bool(b.get("is_error")), str(b["content"])) for b in blocks if b["type"] == "tool_result"
    ]


async def test_the_model_numbers_criteria_from_1_and_is_answered_in_its_numbers(
    make_loop: LoopFactory,
) -> None:
    steps = [
        calls(use("echo", "toolu_echo", text=SAW)),
        calls(reported(0), reported(3), reported(2)),
        say("RESULT: done"),
        calls(reported(1)),
        say("RESULT: done"),
    ]
    loop, model = make_loop(steps, criteria=["first", "second"])
    events, result = await drain(loop)
    model.assert_complete()
    tool = next(t for t in model.requests[0]["tools"] if t["name"] == "report_criterion")
    assert tool["input_schema"]["properties"]["index"]["minimum"] == 1
    assert "the first being 1" in tool["description"]
    zero, three, two = results(model.requests[2])
    assert zero[0] and "Invalid arguments for report_criterion" in zero[1]
    assert three == (
        True,
        "There is no criterion 3; the card has 2, numbered 1 to 2 in the card's order.",
    )
    assert two == (False, "criterion 2 recorded as passed; still unverified: criterion 1")
    objection = str(model.requests[3]["messages"][-1]["content"])
    assert "without passing evidence for criterion 1" in objection
    assert "criterion 1 has no evidence yet" in objection and "criterion 2" not in objection
    assert [e.index for e in events if isinstance(e, CriterionReported)] == [1, 0]
    assert result.status == "done" and [e.index for e in result.ledger] == [0, 1]


async def test_a_run_begun_counting_from_0_is_resumed_counting_from_0(tmp_path: Path) -> None:
    """A resume sends the logged tools again, so the model still counts from 0: the runner reads
    that from the logged tool itself, and a 0 means the first criterion, as it did."""
    log = CallLog(FixedState(), "fixed")
    emitted: list[Event] = []
    ctx = ToolContext(1, emitted.append, "toolu_echo")
    await log.observe("echo", {"text": SAW}, ctx, ToolResult(f"echo: {SAW}"))
    old = Evidence(
        ["first", "second"], log, True, tmp_path / "e", tmp_path, EvidenceSoFar(numbered_from=0)
    )
    spec = {"name": "report_criterion", "input_schema": old.tool().input_schema}
    assert numbered_from([spec]) == 0
    new = Evidence(["first"], log, True, tmp_path / "e", tmp_path)
    assert (
        numbered_from([{"name": "report_criterion", "input_schema": new.tool().input_schema}]) == 1
    )
    assert numbered_from(None) == 1  # a log without its tools: today's are sent, from 1
    args = reported(0)["input"]
    answer = await old.tool().call(args, ToolContext(2, emitted.append, "toolu_report"))
    assert answer.text == "criterion 0 recorded as passed; still unverified: criterion 1"
    assert old.missing() == [1] and old.named([0, 1]) == "criteria 0, 1"
