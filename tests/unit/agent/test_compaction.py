"""A long run stays inside the context window, and every request stays valid for the strict API."""

from __future__ import annotations

from cardrunner.agent.compaction import STUB_PREFIX, SUMMARY_PREFIX, Compactor, estimate_tokens
from cardrunner.agent.events import Compacted
from cardrunner.config.settings import Limits, ModelOptions
from cardrunner.models.scripted import ScriptedModel
from tests.unit.agent.conftest import LoopFactory, big_tool, calls, cite, drain, say, use

ROUNDS = 45


def long_script() -> list[dict[str, object]]:
    steps = [calls(use("big", f"big_{i}", tag=f"r{i}:"), think=True) for i in range(ROUNDS)]
    last = f"big_{ROUNDS - 1}"
    report = use(
        "report_criterion",
        index=1,
        passed=True,
        evidence="ok",
        cites=[cite(last, f"r{ROUNDS - 1}:xxx")],
    )
    steps.append(calls(report))
    steps.append(say("RESULT: done"))
    return steps


WINDOW = 12_000
LONG_RUN = ModelOptions(context_window=WINDOW, compact_at=0.5, keep_tool_results=4)


async def run_long(make_loop: LoopFactory, api_model: str | None = None) -> ScriptedModel:
    """Run the 45-round script against a 12,000-token window: it ends done, every one of its 47
    requests passed the strict checks, and it both stubbed tool results and summarised rounds."""
    compactor = Compactor(WINDOW, LONG_RUN.compact_at, LONG_RUN.keep_tool_results)
    loop, model = make_loop(
        long_script(),
        tools=[big_tool(3800)],
        options=LONG_RUN,
        compactor=compactor,
        limits=Limits(max_tokens=0),
        api_model=api_model,
    )
    events, result = await drain(loop)
    model.assert_complete()  # every one of the 47 requests passed the strict checks
    assert result.status == "done"
    assert {e.kind for e in events if isinstance(e, Compacted)} == {"stub_tool_results", "summary"}
    return model


async def test_a_45_round_run_with_caching_and_compaction_stays_valid(
    make_loop: LoopFactory,
) -> None:
    model = await run_long(make_loop)
    for body in model.requests:
        sent = sum(len(str(m)) for m in body["messages"]) / 4
        assert sent < WINDOW, "no request outgrew the window"
        uses = {
            b["id"]
            for m in body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "tool_use"
        }
        results = {
            b["tool_use_id"]
            for m in body["messages"]
            if m["role"] == "user"
            for b in m["content"]
            if b["type"] == "tool_result"
        }
        assert uses == results, "every tool_use keeps its tool_result"
    last = model.requests[-1]["messages"]
    assert SUMMARY_PREFIX in str(last[0]["content"])
    stubs = [
        str(b["content"])
        for body in model.requests
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if STUB_PREFIX in str(b.get("content", ""))
    ]
    assert stubs and all("big(" in s and "re-run the tool" in s for s in stubs)


def test_compaction_does_nothing_below_the_threshold() -> None:
    from cardrunner.agent.model import Message

    messages = [Message("user", [{"type": "text", "text": "card"}])]
    assert list(Compactor(1_000_000, 0.5, 8).compact(messages)) == []
    assert estimate_tokens(messages) < 100


def test_stubs_replay_exactly_for_resume() -> None:
    from cardrunner.agent.model import Message

    def convo() -> list[Message]:
        out = [Message("user", [{"type": "text", "text": "card"}])]
        for i in range(6):
            out.append(
                Message(
                    "assistant",
                    [{"type": "tool_use", "id": f"t{i}", "name": "big", "input": {"i": i}}],
                )
            )
            out.append(
                Message(
                    "user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 2000}]
                )
            )
        return out

    a = convo()
    events = list(Compactor(2000, 0.5, 2).compact(a))
    b = convo()
    for e in events:
        if e.kind == "stub_tool_results":
            Compactor.apply_stubs(b, e.tool_use_ids)
        else:
            Compactor.apply_summary(b, e.removed_messages, e.summary)
    assert [m.wire() for m in a] == [m.wire() for m in b]


async def test_on_sonnet_5_5_compaction_removes_the_thinking_it_would_invalidate(
    make_loop: LoopFactory,
) -> None:
    """The scripted model binds every signature to its prefix: a rewrite that kept the thinking
    after it would fail its check at the next request."""
    model = await run_long(make_loop, api_model="claude-sonnet-5-5")
    thinking_sent = [
        sum(b["type"] == "thinking" for m in body["messages"] for b in m["content"])
        for body in model.requests
    ]
    assert max(thinking_sent) > 1, "thinking is sent back while nothing before it changed"
    assert min(thinking_sent[5:]) < max(thinking_sent), "and removed where a rewrite was"


def test_stubbing_strips_thinking_only_after_the_first_rewritten_message() -> None:
    from cardrunner.agent.model import Message

    think = {"type": "thinking", "thinking": "", "signature": "s"}
    out = [Message("user", [{"type": "text", "text": "card"}])]
    for i in range(4):
        use = {"type": "tool_use", "id": f"t{i}", "name": "big", "input": {}}
        out.append(Message("assistant", [dict(think), use]))
        out.append(
            Message("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "y"}])
        )
    Compactor.apply_stubs(out, ["t1"])
    kinds = [[b["type"] for b in m.content] for m in out if m.role == "assistant"]
    assert kinds == [["thinking", "tool_use"], ["thinking", "tool_use"], ["tool_use"], ["tool_use"]]


def test_after_a_compaction_the_estimate_starts_again_so_the_next_step_waits() -> None:
    """A stale running total made every round after the first compaction compact again, which
    cooled the prompt cache every round."""
    from cardrunner.agent.model import Message

    messages = [Message("user", [{"type": "text", "text": "card"}])]
    compactor = Compactor(20_000, 0.5, 2)
    steps = []
    for i in range(40):
        use = {"type": "tool_use", "id": f"t{i}", "name": "big", "input": {"i": i}}
        messages.append(Message("assistant", [use]))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 4000}
        messages.append(Message("user", [result]))
        steps.append(len(list(compactor.compact(messages))))
    assert sum(steps) <= 6, steps  # in steps, not every round
    assert abs(compactor._estimate(messages) - estimate_tokens(messages)) <= len(messages)
