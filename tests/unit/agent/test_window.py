"""The window as a hard limit in the loop: an endpoint's "exceeds the context" answer is the
API's window signal — compact, try once more, then a named reason; never a raw 400."""

from __future__ import annotations

from cardrunner.agent.compaction import Compactor
from cardrunner.agent.events import Compacted, Notice
from cardrunner.agent.model import ModelRequest, ModelResponse, WindowExceeded
from cardrunner.models.scripted import ScriptedModel
from tests.unit.agent.conftest import LoopFactory, big_tool, calls, drain, report_last, say, use


class Refusing:
    """The scripted model behind an endpoint that refuses the requests numbered in `refuse`."""

    def __init__(self, inner: ScriptedModel, refuse: set[int]) -> None:
        self.inner, self.refuse, self.asked = inner, refuse, 0

    @property
    def name(self) -> str:
        return self.inner.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.asked += 1
        if self.asked in self.refuse:
            raise WindowExceeded(
                "the endpoint says the conversation exceeds the context window of m; set "
                "[models.m] context_window",
                said="BadRequestError: the request exceeds the available context size",
            )
        return await self.inner.respond(request)


async def test_an_endpoints_window_answer_compacts_and_the_run_goes_on(
    make_loop: LoopFactory,
) -> None:
    steps = [calls(use("big", f"big_{i}", tag=f"r{i}:")) for i in range(5)]
    steps += [report_last(), say("RESULT: done")]
    loop, scripted = make_loop(
        steps, tools=[big_tool(3800)], compactor=Compactor(1_000_000, 0.5, 1)
    )
    loop.model = Refusing(scripted, {6})
    events, result = await drain(loop)
    assert result.status == "done", result
    assert any(isinstance(e, Compacted) for e in events), "forced, far below the share"
    assert any(isinstance(e, Notice) and "compacting" in e.message for e in events)


async def test_a_second_window_answer_in_a_row_ends_the_run_with_the_setting_named(
    make_loop: LoopFactory,
) -> None:
    steps = [calls(use("big", f"big_{i}", tag=f"r{i}:")) for i in range(5)]
    loop, scripted = make_loop(
        steps, tools=[big_tool(3800)], compactor=Compactor(1_000_000, 0.5, 1)
    )
    loop.model = Refusing(scripted, {3, 4})
    _, result = await drain(loop)
    assert (result.status, result.reason) == ("failed", "api_error")
    assert "[models.m] context_window" in result.detail
    assert result.rounds == 2, "the refused requests cost no round"
