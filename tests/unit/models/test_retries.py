"""Honest retries through the real SDK and the fake: a named delay is waited out within the wall
budget, a spend limit is named instead of retried, overload backs off with jitter."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from cardrunner.agent.model import Message, ModelError, ModelRequest
from cardrunner.config.settings import ModelOptions
from cardrunner.models.anthropic import AnthropicModel, GiveUp, Retry, decide
from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault

ANSWER = {"content": [{"type": "text", "text": "Hello."}], "stop_reason": "end_turn"}


def request(time_left: float | None = None) -> ModelRequest:
    return ModelRequest(
        system="Be brief.",
        tools=[],
        messages=[Message("user", [{"type": "text", "text": "Hi."}])],
        max_tokens=100,
        time_left=time_left,
    )


async def _respond(faults: dict[int, Fault], time_left: float | None = None) -> tuple[Any, int]:
    options = ModelOptions(max_retries=2, retry_max_delay_seconds=0.01)
    async with FakeMessagesAPI([ANSWER], faults=faults) as api:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=0)
        model = AnthropicModel("claude-sonnet-5-5", options, client=client)
        try:
            outcome: Any = await model.respond(request(time_left))
        except ModelError as exc:
            outcome = exc
        await client.close()
        return outcome, len(api.requests)


async def test_sustained_rate_limiting_is_waited_out_beyond_max_retries() -> None:
    faults = {i: Fault.http_error(429, retry_after_ms=20) for i in range(6)}
    outcome, attempts = await _respond(faults)
    assert not isinstance(outcome, ModelError), outcome
    assert attempts == 7, "six named waits, more than max_retries=2, then the answer"


async def test_a_spend_limit_is_named_and_not_retried() -> None:
    outcome, attempts = await _respond({0: Fault.spend_limit()})
    assert isinstance(outcome, ModelError) and attempts == 1
    assert "spend or quota limit is reached" in str(outcome) and "waiting will not help" in str(
        outcome
    )


async def test_a_named_delay_longer_than_the_wall_budget_left_ends_at_once() -> None:
    outcome, attempts = await _respond({0: Fault.http_error(429, retry_after=120)}, time_left=30)
    assert isinstance(outcome, ModelError) and attempts == 1
    assert "wait 120 s, more than the 30 s left of the wall budget" in str(outcome)


async def test_overload_backs_off_max_retries_times_then_names_529() -> None:
    outcome, attempts = await _respond({i: Fault.overloaded() for i in range(5)})
    assert isinstance(outcome, ModelError) and attempts == 3 and "529" in str(outcome)


class _Status(Exception):
    def __init__(self, status: int) -> None:
        self.status_code = status


@pytest.mark.parametrize("attempt", [0, 1, 2, 3])
def test_backoff_is_exponential_with_jitter_and_capped(attempt: int) -> None:
    waits = [
        decide(_Status(529), attempt, retryable=True, max_retries=9, max_backoff=3, time_left=None)
        for _ in range(200)
    ]
    seconds = [w.seconds for w in waits if isinstance(w, Retry)]
    assert len(seconds) == 200
    top = min(3.0, 0.5 * 2**attempt)
    assert all(top * 0.5 <= s <= top for s in seconds) and len(set(seconds)) > 100


def test_a_bad_request_is_never_retried() -> None:
    assert isinstance(
        decide(_Status(400), 0, retryable=False, max_retries=9, max_backoff=3, time_left=None),
        GiveUp,
    )


async def test_the_drop_block_escape_hatch_is_sent_with_its_beta_header() -> None:
    """For old logs: the setting turns a prefix mismatch into dropped thinking, not a 400."""
    options = ModelOptions()
    think = {"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "a"}]}
    async with FakeMessagesAPI([think, ANSWER]) as api:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=0)
        model = AnthropicModel("claude-sonnet-5-5", options, client=client)
        first = await model.respond(request())
        later = request()
        later.drop_mismatched_thinking = True  # the loop sets it from the setting
        later.system = "Be thorough."  # the prefix of the first answer's thinking changed
        later.messages += [
            Message("assistant", first.content),
            Message("user", [{"type": "text", "text": "And?"}]),
        ]
        await model.respond(later)
        await client.close()
    assert not api.violations, api.violations
    assert api.requests[1].headers["anthropic-beta"] == "thinking-binding-controls-2026-08-01"
    assert api.transformations[1][0]["path"] == "messages.1.content.0"
