"""What the API changed before answering reaches the run: `input_transformations`, through the
real SDK's stream against the strict fake, becomes a warning the user sees in every front end."""

from __future__ import annotations

from typing import Any

import anthropic

from cardrunner.agent.loop import dropped_notice
from cardrunner.agent.model import Message, ModelRequest
from cardrunner.config.settings import ModelOptions
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.testing.fake_api import FakeMessagesAPI

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
CALL = {
    "content": [
        {"type": "thinking", "thinking": "Read a first."},
        {"type": "tool_use", "name": "read_file", "input": {"path": "a"}},
    ],
    "stop_reason": "tool_use",
}
DONE = {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}
DROPPED = {"type": "thinking_dropped", "path": "messages.1.content.0",
           "reason": "prefix_binding_mismatch"}  # fmt: skip


def request(system: str, messages: list[Message], drop: bool) -> ModelRequest:
    return ModelRequest(
        system=system, tools=TOOLS, messages=messages, max_tokens=500,
        drop_mismatched_thinking=drop,
    )  # fmt: skip


async def test_a_dropped_thinking_block_comes_back_with_the_answer() -> None:
    async with FakeMessagesAPI([CALL, DONE]) as api:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=0)
        model = AnthropicModel("claude-sonnet-5-5", ModelOptions(), client=client)
        ask = [Message("user", [{"type": "text", "text": "Fix it."}])]
        first = await model.respond(request("Today is Monday.", ask, drop=False))
        assert first.transformations == []
        call = next(b for b in first.content if b["type"] == "tool_use")
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": "a's text"}
        conversation = [*ask, Message("assistant", first.content), Message("user", [result])]
        # a system prompt that changed since the thinking was made: its binding no longer holds
        second = await model.respond(request("Today is Tuesday.", conversation, drop=True))
        await client.close()
    assert not api.violations
    assert second.transformations == [DROPPED]
    assert [b["type"] for b in second.content] == ["text"]


def test_the_warning_says_how_many_blocks_and_where() -> None:
    notice = dropped_notice([DROPPED] * 7)
    assert notice.level == "warning"
    assert notice.message.startswith("the API dropped 7 block(s) of the conversation")
    assert "thinking_dropped: messages.1.content.0" in notice.message
    assert "and 2 more" in notice.message
