"""The prompt-cache simulation: the numbers a caching benchmark relies on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cardrunner.apirules.promptcache import PromptCache, estimate_tokens
from cardrunner.testing.fake_script import Fault, ResponseBuilder, load_transcript

MARK = {"type": "ephemeral"}
SYSTEM = "Follow the rules of the house. " * 100  # 3100 characters


def body(turns: int, *, marks: int = 1, ttl: str | None = None, model: str = "m") -> dict[str, Any]:
    """A conversation of `turns` user turns; the last `marks` user turns carry a breakpoint."""
    mark = {**MARK, "ttl": ttl} if ttl else MARK
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        if n:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{n}"}]})
        block: dict[str, Any] = {"type": "text", "text": f"user turn {n} " * 20}
        if n >= turns - marks:
            block["cache_control"] = mark
        messages.append({"role": "user", "content": [block]})
    return {"model": model, "system": SYSTEM, "messages": messages}


def test_tokens_are_a_quarter_of_the_json_characters() -> None:
    assert estimate_tokens("abcd") == 2  # '"abcd"' is 6 characters
    assert estimate_tokens({"a": 1}) == 2


def test_prompts_below_the_minimum_are_not_written() -> None:
    cache = PromptCache(min_cacheable_tokens=10_000)
    first = cache.measure(body(1))
    assert first.cache_creation_input_tokens == 0 and first.input_tokens == cache.count(body(1))
    assert len(cache) == 0


def test_a_growing_conversation_reads_the_previous_round() -> None:
    cache = PromptCache(min_cacheable_tokens=100)
    previous = 0
    for turns in range(1, 6):
        usage = cache.measure(body(turns))
        total = cache.count(body(turns))
        assert usage.cache_read_input_tokens == previous
        assert usage.cache_creation_input_tokens == total - previous
        assert usage.input_tokens == 0
        previous = total


def test_moving_breakpoints_do_not_change_the_prompt() -> None:
    assert PromptCache().count(body(3, marks=0)) == PromptCache().count(body(3, marks=2))


def test_without_breakpoints_nothing_is_read_or_written() -> None:
    cache = PromptCache(min_cacheable_tokens=100)
    cache.measure(body(2))
    usage = cache.measure(body(2, marks=0))
    assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens == 0


def test_the_top_level_cache_control_marks_the_last_block() -> None:
    cache = PromptCache(min_cacheable_tokens=100)
    automatic = {**body(2, marks=0), "cache_control": MARK}
    assert cache.measure(automatic).cache_creation_input_tokens == cache.count(automatic)
    assert cache.measure(automatic).cache_read_input_tokens == cache.count(automatic)


def test_another_model_does_not_share_the_cache() -> None:
    cache = PromptCache(min_cacheable_tokens=100)
    cache.measure(body(2))
    assert cache.measure(body(2, model="other")).cache_read_input_tokens == 0


def test_entries_expire_and_reads_refresh_them() -> None:
    now = [0.0]
    cache = PromptCache(min_cacheable_tokens=100, clock=lambda: now[0])
    cache.measure(body(2))
    now[0] = 250.0
    assert cache.measure(body(2)).cache_read_input_tokens > 0  # refreshed until 550
    now[0] = 500.0
    assert cache.measure(body(2)).cache_read_input_tokens > 0
    now[0] = 1000.0
    assert cache.measure(body(2)).cache_read_input_tokens == 0


def test_one_hour_writes_are_reported_apart() -> None:
    now = [0.0]
    cache = PromptCache(min_cacheable_tokens=100, clock=lambda: now[0])
    usage = cache.measure(body(2, ttl="1h"))
    assert usage.cache_creation_1h == usage.cache_creation_input_tokens > 0
    assert usage.cache_creation_5m == 0
    now[0] = 1800.0
    assert cache.measure(body(2, ttl="1h")).cache_read_input_tokens > 0


def test_a_breakpoint_too_far_from_the_entry_misses_it() -> None:
    cache = PromptCache(min_cacheable_tokens=100, lookback_blocks=3)
    cache.measure(body(2))
    assert cache.measure(body(5)).cache_read_input_tokens == 0  # 6 blocks further on


def _billed(usage: Any) -> float:
    return (
        usage.input_tokens
        + 1.25 * usage.cache_creation_input_tokens
        + 0.1 * usage.cache_read_input_tokens
    )


def test_caching_a_long_run_bills_far_less_than_not_caching() -> None:
    cached, plain = PromptCache(), PromptCache()
    with_cache = sum(_billed(cached.measure(body(n, marks=2))) for n in range(1, 31))
    without = sum(_billed(plain.measure(body(n, marks=0))) for n in range(1, 31))
    assert with_cache < 0.4 * without


def test_a_transcript_may_carry_faults(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    entries = [{"fault": {"kind": "http_error", "status": 429}}, {"content": []}]
    path.write_text(json.dumps({"responses": entries}))
    fault, response = load_transcript(path)
    assert fault == Fault("http_error", status=429, error_type="rate_limit_error")
    assert response == {"content": []}
    path.write_text(json.dumps({"responses": [{"fault": {"kind": "explode"}}]}))
    with pytest.raises(ValueError, match="not a fault"):
        load_transcript(path)
    path.write_text(json.dumps([1]))
    with pytest.raises(ValueError, match="expected"):
        load_transcript(path)


def test_scripted_content_is_completed_like_the_api_would() -> None:
    builder = ResponseBuilder()
    content = builder.content(
        {"content": [{"type": "thinking", "thinking": "t"}, {"type": "tool_use", "name": "x"}]}
    )
    assert content[0]["signature"].startswith("sig_")
    assert content[1] == {"type": "tool_use", "name": "x", "id": "toolu_1", "input": {}}
    assert builder.stop_reason({}, content) == "tool_use"
    with pytest.raises(ValueError):
        builder.content({"content": [{"type": "tool_result", "tool_use_id": "x"}]})
    with pytest.raises(ValueError):
        builder.stop_reason({"stop_reason": "bored"}, content)
