"""Every budget ends the run with its own reason; the wrap-up notice comes once at 80 %."""

from __future__ import annotations

from cardrunner.agent.events import ToolFinished
from cardrunner.config.model_table import Price
from cardrunner.config.settings import Limits
from tests.unit.agent.conftest import LoopFactory, calls, drain, say, use

U = {"input_tokens": 1000, "output_tokens": 100}


def many(n: int) -> list[dict[str, object]]:
    return [calls(use("echo", text=str(i)), usage=U) for i in range(n)]


async def test_max_rounds(make_loop: LoopFactory) -> None:
    loop, model = make_loop(many(10), limits=Limits(max_rounds=4))
    _, result = await drain(loop)
    assert (result.reason, result.rounds, len(model.requests)) == ("max_rounds", 4, 4)


async def test_max_tokens(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(many(10), limits=Limits(max_tokens=3000))
    _, result = await drain(loop)
    assert result.reason == "max_tokens" and result.rounds == 3


async def test_max_cost_uses_all_four_rates(make_loop: LoopFactory) -> None:
    price = Price(input=1000, output=0, cache_read=0, cache_write=0)  # $1 per round of 1000 input
    loop, _ = make_loop(many(10), limits=Limits(max_cost_usd=2.5), price=price)
    _, result = await drain(loop)
    assert result.reason == "max_cost" and result.rounds == 3 and result.cost_usd == 3.0


async def test_max_wall(make_loop: LoopFactory) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 10
        return now[0]

    loop, _ = make_loop(many(10), limits=Limits(max_wall_seconds=35), clock=clock)
    _, result = await drain(loop)
    assert result.reason == "max_wall"


async def test_off_means_off(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(
        [*many(5), say("RESULT: done")],
        limits=Limits(max_rounds=0, max_tokens=0),
        require_evidence=False,
    )
    _, result = await drain(loop)
    assert result.status == "done" and result.rounds == 6


async def test_wrap_up_notice_once_at_80_percent(make_loop: LoopFactory) -> None:
    loop, _ = make_loop(many(10), limits=Limits(max_rounds=10))
    events, result = await drain(loop)
    notices = [e for e in events if isinstance(e, ToolFinished) and "80%" in e.result]
    assert len(notices) == 1 and notices[0].round == 8
    assert "2 rounds" in notices[0].result and "RESULT" in notices[0].result
    assert result.reason == "max_rounds"
