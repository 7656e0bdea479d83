"""The fake Messages API runs the prefix check on thinking blocks, through the real SDK."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic

from cardrunner.apirules.binding import BINDING_BETA
from cardrunner.testing.fake_api import FakeMessagesAPI

MODEL = "claude-sonnet-5-5"
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
CALL = {
    "content": [
        {"type": "thinking", "thinking": ""},
        {"type": "tool_use", "name": "read_file", "input": {"path": "a"}},
    ],
    "stop_reason": "tool_use",
}
DONE = {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}


async def _first_round(sdk: AsyncAnthropic, system: str) -> list[Any]:
    first = await sdk.messages.create(
        model=MODEL,
        max_tokens=500,
        system=system,
        tools=TOOLS,
        messages=[{"role": "user", "content": "Fix it."}],
    )
    turn = [b.model_dump(exclude_none=True) for b in first.content]
    result = {"type": "tool_result", "tool_use_id": turn[1]["id"], "content": "a's text"}
    return [
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": turn},
        {"role": "user", "content": [result]},
    ]


async def test_a_changed_system_prompt_is_the_real_400() -> None:
    async with FakeMessagesAPI([CALL, DONE]) as api:
        sdk = AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=2)
        messages = await _first_round(sdk, "Today is Monday.")
        with pytest.raises(anthropic.BadRequestError) as caught:
            await sdk.messages.create(
                model=MODEL, max_tokens=500, system="Today is Tuesday.", tools=TOOLS,
                messages=messages,
            )  # fmt: skip
        await sdk.close()
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith(
        "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a"
        " different conversation."
    )
    assert len(api.requests) == 2, "a 400 is not retried"
    assert len(api.violations) == 1


async def test_drop_block_with_its_beta_header_goes_on_and_lists_what_it_dropped() -> None:
    async with FakeMessagesAPI([CALL, DONE]) as api:
        sdk = AsyncAnthropic(api_key="sk-test", base_url=api.base_url)
        messages = await _first_round(sdk, "Today is Monday.")
        reply = await sdk.messages.create(
            model=MODEL,
            max_tokens=500,
            system="Today is Tuesday.",
            tools=TOOLS,
            messages=messages,
            thinking={
                "type": "adaptive",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"},
            },  # type: ignore[typeddict-unknown-key]
            extra_headers={"anthropic-beta": BINDING_BETA},
        )
        await sdk.close()
    assert not api.violations
    assert reply.content[0].type == "text"
    dropped = [{"type": "thinking_dropped", "path": "messages.1.content.0",
                "reason": "prefix_binding_mismatch"}]  # fmt: skip
    assert api.transformations == [[], dropped]
    assert (reply.model_extra or {}).get("input_transformations") == dropped
