"""The loop against a strict scripted model: pairing, errors, stop reasons, the RESULT contract."""

from __future__ import annotations

from dataclasses import replace

from cardrunner.agent.events import (
    Compacted,
    CriterionReported,
    GateObjected,
    Notice,
    RoundFinished,
    ToolFinished,
)
from cardrunner.agent.model import ModelRequest, ModelResponse
from cardrunner.apirules.request import build_body
from cardrunner.config.settings import ModelOptions
from tests.unit.agent.conftest import LoopFactory, big_tool, calls, drain, report_last, say, use

DONE = say("All verified.\nRESULT: done")
REPORT = report_last(1)


async def test_a_run_that_reports_evidence_ends_done(make_loop: LoopFactory) -> None:
    loop, model = make_loop(
        [calls(use("echo", text="hi"), use("echo", text="ho"), think=True), REPORT, DONE]
    )
    events, result = await drain(loop)
    model.assert_complete()
    assert result.status == "done" and result.reason is None
    assert result.rounds == 3 and result.tool_calls == 3
    tools = [e for e in events if isinstance(e, ToolFinished)]
    assert [t.result for t in tools[:2]] == ["echo: hi", "echo: ho"]
    # both results of one turn went back in ONE user message, in order, paired by id
    second = model.requests[1]["messages"][-1]["content"]
    firsts = model.requests[1]["messages"][-2]["content"]
    ids = [b["id"] for b in firsts if b["type"] == "tool_use"]
    assert [b["tool_use_id"] for b in second] == ids
    # the thinking block went back untouched (the scripted model checks it too)
    assert model.requests[1]["messages"][1]["content"][0]["type"] == "thinking"
    assert any(isinstance(e, CriterionReported) and e.passed for e in events)


async def test_no_request_carries_sampling_parameters_and_breakpoints_stay_within_four(
    make_loop: LoopFactory,
) -> None:
    loop, model = make_loop([calls(use("echo", text=str(i))) for i in range(4)] + [REPORT, DONE])
    await drain(loop)
    for i, body in enumerate(model.requests):
        assert not {"temperature", "top_p", "top_k"} & body.keys()
        marks = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert len(marks) + 1 <= 4
        if i >= 1:  # from round 2 on, the previous round's end is a breakpoint
            assert len(marks) == 2


async def test_unknown_tool_and_bad_arguments_are_errors_the_model_sees(
    make_loop: LoopFactory,
) -> None:
    loop, model = make_loop(
        [
            calls(use("nope")),
            calls(use("echo", text=3)),
            calls(use("echo", text="ok")),
            REPORT,
            DONE,
        ]
    )
    events, result = await drain(loop)
    assert result.status == "done"
    tools = [e for e in events if isinstance(e, ToolFinished)]
    assert (
        tools[0].is_error and "Unknown tool 'nope'" in tools[0].result and "echo" in tools[0].result
    )
    assert tools[1].is_error and "Invalid arguments for echo" in tools[1].result
    sent = model.requests[1]["messages"][-1]["content"][0]
    assert sent["is_error"] is True and sent["type"] == "tool_result"


async def test_crashing_and_hanging_tools_become_errors(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(
        [calls(use("crash")), calls(use("hang")), calls(use("echo", text="x")), REPORT, DONE]
    )
    events, result = await drain(loop)
    tools = [e for e in events if isinstance(e, ToolFinished)]
    assert "RuntimeError: unexpected crash" in tools[0].result and tools[0].is_error
    assert "did not finish within" in tools[1].result and tools[1].is_error
    assert result.status == "done"


async def test_three_errors_in_a_row_end_the_run(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(
        [calls(use("fail", n=1)), calls(use("crash")), calls(use("fail", n=2)), DONE]
    )
    _, result = await drain(loop)
    assert (result.status, result.reason) == ("failed", "tool_errors")


async def test_the_same_call_three_times_is_a_stall(make_loop: LoopFactory) -> None:
    loop, _ = make_loop([calls(use("echo", text="same")) for _ in range(3)] + [DONE])
    _, result = await drain(loop)
    assert result.reason == "stalled" and "echo" in result.detail


async def test_the_same_error_three_times_is_a_stall(make_loop: LoopFactory) -> None:
    loop, _ = make_loop([calls(use("fail", n=1)), calls(use("fail", n=1)), calls(use("fail", n=1))])
    _, result = await drain(loop)
    assert result.reason == "stalled"


async def test_done_without_evidence_is_unverified(make_loop: LoopFactory) -> None:
    loop, model = make_loop(
        [calls(use("echo", text="a")), DONE, DONE, DONE], criteria=["one", "two"]
    )
    events, result = await drain(loop)
    model.assert_complete()
    assert result.reason == "unverified" and "criteria 1, 2" in result.detail
    told = [e for e in events if isinstance(e, GateObjected)]
    assert [e.attempt for e in told] == [1, 2]
    assert (
        "criterion 1 has no evidence yet" in model.requests[2]["messages"][-1]["content"][0]["text"]
    )


async def test_evidence_can_be_switched_off(make_loop: LoopFactory) -> None:
    loop, _ = make_loop([DONE], require_evidence=False)
    _, result = await drain(loop)
    assert result.status == "done"


async def test_failed_result_line_carries_the_models_reason(make_loop: LoopFactory) -> None:
    loop, _ = make_loop([say("I could not.\nRESULT: failed: the app does not start")])
    _, result = await drain(loop)
    assert (result.reason, result.detail) == ("model_failed", "the app does not start")


async def test_missing_result_line(make_loop: LoopFactory) -> None:
    loop, model = make_loop([say("I think it is fine.")] * 3)
    _, result = await drain(loop)
    model.assert_complete()  # told twice what the last line must be, then ended
    assert result.reason == "no_result_line"


async def test_stop_reasons_truncated_refusal_and_pause_turn(make_loop: LoopFactory) -> None:
    # a cut-off answer is continued twice with a larger limit; the third ends the run
    loop, model = make_loop([say("partial", stop="max_tokens")] * 3)
    assert (await drain(loop))[1].reason == "truncated"
    assert [r["max_tokens"] for r in model.requests] == [16_000, 16_000, 16_000]
    loop, _ = make_loop([say("I won't help with that.", stop="refusal")])
    assert (await drain(loop))[1].reason == "refusal"
    loop, model = make_loop([say("searching", stop="pause_turn"), DONE], require_evidence=False)
    _, result = await drain(loop)
    assert result.status == "done" and len(model.requests) == 2


def test_build_body_marks_system_and_the_last_two_user_turns() -> None:
    from cardrunner.agent.model import Message, ModelRequest

    msgs = [
        Message("user", [{"type": "text", "text": "card"}]),
        Message("assistant", [{"type": "tool_use", "id": "t1", "name": "echo", "input": {}}]),
        Message("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
    ]
    body = build_body(ModelRequest("sys", [], msgs, 100), "m")
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" in body["messages"][0]["content"][-1]
    assert "cache_control" in body["messages"][2]["content"][-1]
    assert "cache_control" not in msgs[2].content[-1], "the stored conversation is never changed"
    assert "temperature" not in body
    body = build_body(ModelRequest("sys", [], msgs, 100, cache=False), "m")
    assert "cache_control" not in str(body)


async def test_round_events_carry_usage_and_totals(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(
        [say("RESULT: done", usage={"input_tokens": 10, "output_tokens": 5})],
        require_evidence=False,
    )
    events, result = await drain(loop)
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert rounds[0].usage.input_tokens == 10 and rounds[0].total_usage.total == 15
    assert result.usage.input_tokens == 10 and result.usage.output_tokens == 5


async def test_a_round_of_parallel_failures_is_one_failed_round(make_loop: LoopFactory) -> None:
    """Three calls that fail together count once: the model reads the errors and goes on."""
    three = calls(use("fail", n=1), use("fail", n=2), use("crash"))
    loop, model = make_loop([three, calls(use("echo", text="fixed")), REPORT, DONE])
    events, result = await drain(loop)
    assert result.status == "done", result
    failed = [e for e in events if isinstance(e, ToolFinished) and e.is_error]
    assert len(failed) == 3
    second = model.requests[1]["messages"][-1]["content"]
    assert [b.get("is_error") for b in second] == [True, True, True], "the model saw them all"


async def test_three_rounds_of_parallel_failures_end_the_run(make_loop: LoopFactory) -> None:
    rounds = [calls(use("fail", n=i), use("crash")) for i in range(3)]
    loop, model = make_loop([*rounds, DONE])
    _, result = await drain(loop)
    assert (result.reason, result.rounds) == ("tool_errors", 3)
    assert "3 rounds in a row" in result.detail
    assert len(model.requests) == 3, "two rounds of errors were answered before the stop"


async def test_one_success_in_a_round_resets_the_count(make_loop: LoopFactory) -> None:
    mixed = [calls(use("fail", n=i), use("echo", text=str(i))) for i in range(4)]
    loop, _ = make_loop([*mixed, REPORT, DONE])
    _, result = await drain(loop)
    assert result.status == "done", result


async def test_max_tokens_in_a_tool_call_goes_on_with_a_note_and_a_larger_limit(
    make_loop: LoopFactory,
) -> None:
    cut = {**calls(use("echo", text="half of it")), "stop_reason": "max_tokens"}
    loop, model = make_loop(
        [cut, calls(use("echo", text="whole")), REPORT, DONE],
        options=ModelOptions(max_output_tokens=8000),
        output_ceiling=128_000,
    )
    events, result = await drain(loop)
    assert result.status == "done", result
    assert [r["max_tokens"] for r in model.requests] == [8000, 16_000, 16_000, 16_000]
    answered = model.requests[1]["messages"][-1]["content"]
    assert answered[0]["is_error"] and "was not run" in answered[0]["content"]
    assert "raised from 8,000 to 16,000 tokens" in answered[1]["text"]
    ran = [e.arguments for e in events if isinstance(e, ToolFinished) and not e.is_error]
    assert {"text": "half of it"} not in ran, "a cut-off call is never run"


async def test_a_context_window_exceeded_compacts_and_goes_on(make_loop: LoopFactory) -> None:
    from cardrunner.agent.compaction import Compactor

    steps = [calls(use("big", f"big_{i}", tag=f"r{i}:")) for i in range(6)]
    steps.append(
        {
            "content": [{"type": "text", "text": "I was"}],
            "stop_reason": "model_context_window_exceeded",
        }
    )
    report = use("report_criterion", index=1, passed=True, evidence="ok")
    report["input"]["cites"] = [{"call": "big_5", "quote": "r5:xxx"}]
    steps += [calls(report), say("RESULT: done")]
    loop, model = make_loop(steps, tools=[big_tool(3800)], compactor=Compactor(1_000_000, 0.5, 2))
    events, result = await drain(loop)
    assert result.status == "done", result
    assert any(isinstance(e, Compacted) for e in events), "compacted though far below the share"
    assert "outgrew the context window" in str(model.requests[7]["messages"][-1])


async def test_a_secret_in_a_tool_result_is_redacted_before_the_model_sees_it(
    make_loop: LoopFactory,
) -> None:
    """The log redacts; so must what is sent, or a resume would send other text than the run."""
    key = "sk-ant-api03-" + "x" * 20
    loop, model = make_loop([calls(use("echo", text=f"key={key}")), REPORT, DONE])
    events, result = await drain(loop)
    assert result.status == "done"
    sent = str(model.requests[1]["messages"][-1])
    assert key not in sent and "key=[redacted]" in sent
    [tool] = [e for e in events if isinstance(e, ToolFinished)][:1]
    assert tool.result == "echo: key=[redacted]"


async def test_what_the_api_dropped_before_answering_is_a_warning(make_loop: LoopFactory) -> None:
    """A response listing `input_transformations` (drop_block) is told to the user."""
    dropped = {"type": "thinking_dropped", "path": "messages.1.content.0"}
    loop, model = make_loop([calls(use("echo", text="hi"), think=True), REPORT, DONE])

    class Dropping:
        """The scripted model, whose second answer says the API dropped a thinking block."""

        name = model.name

        async def respond(self, request: ModelRequest) -> ModelResponse:
            response = await model.respond(request)
            return replace(response, transformations=[dropped] if len(model.requests) == 2 else [])

    loop.model = Dropping()
    events, result = await drain(loop)
    assert result.status == "done"
    warnings = [e for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert [w.message.split(" (")[0] for w in warnings] == [
        "the API dropped 1 block(s) of the conversation before answering"
    ]
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert events.index(warnings[0]) < events.index(rounds[1])
