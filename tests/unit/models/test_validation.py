"""The strict request validator: each rule the real Messages API enforces, one case at a time."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from cardrunner.apirules.blocks import cache_breakpoints
from cardrunner.apirules.conversation import ConversationChecker, check_thinking_untouched
from cardrunner.apirules.validation import validate_request

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "write_file",
        "description": "Write a whole file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]
THINKING = {"type": "thinking", "thinking": "look first", "signature": "sig_1"}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"}


def valid() -> dict[str, Any]:
    """A three-turn tool conversation the real API accepts."""
    return {
        "model": "claude-sonnet-5-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are careful."}],
        "tools": copy.deepcopy(TOOLS),
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "medium"},
        "messages": [
            {"role": "user", "content": "Fix the card."},
            {
                "role": "assistant",
                "content": [dict(THINKING), {"type": "text", "text": "Ok."}, dict(CALL)],
            },
            {"role": "user", "content": [dict(RESULT), {"type": "text", "text": "go on"}]},
        ],
    }


def test_a_valid_tool_conversation_passes() -> None:
    assert validate_request(valid()) == []


def test_count_tokens_bodies_need_no_max_tokens() -> None:
    body = valid()
    del body["max_tokens"]
    assert validate_request(body, count_tokens=True) == []
    assert any("max_tokens" in e for e in validate_request(body))


def _edit(change: Callable[[dict[str, Any]], None]) -> list[str]:
    body = valid()
    change(body)
    return validate_request(body)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        *keys, last = path.split(".")
        target: Any = body
        for key in keys:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


def _delete(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda body: body.pop(key)


def _messages(*messages: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return _set("messages", list(messages))


USER = {"role": "user", "content": "hi"}
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "no model": (_delete("model"), "model"),
    "no max_tokens": (_delete("max_tokens"), "max_tokens"),
    "max_tokens too big": (_set("max_tokens", 200_000), "max_tokens"),
    "no messages": (_delete("messages"), "messages"),
    "empty messages": (_set("messages", []), "non-empty"),
    "temperature": (_set("temperature", 0.2), "temperature"),
    "top_p": (_set("top_p", 0.9), "top_p"),
    "top_k": (_set("top_k", 5), "top_k"),
    "unknown top-level key": (_set("prompt", "x"), "Extra inputs"),
    "thinking enabled": (_set("thinking", {"type": "enabled", "budget_tokens": 2048}), "adaptive"),
    "thinking nonsense": (_set("thinking", {"type": "sometimes"}), "thinking.type"),
    "bad effort": (_set("output_config", {"effort": "extreme"}), "effort"),
    "forced tool with thinking": (_set("tool_choice", {"type": "any"}), "tool_choice"),
    "first message assistant": (
        _messages({"role": "assistant", "content": "hi"}, USER),
        "first message",
    ),
    "two user messages": (_messages(USER, USER), "alternate"),
    "assistant prefill": (
        _messages(USER, {"role": "assistant", "content": "Sure,"}),
        "prefill",
    ),
    "unknown role": (_messages({"role": "system", "content": "x"}), "role"),
    "unknown block type": (_set("messages.0.content", [{"type": "video"}]), "unknown content"),
    "empty text block": (_set("messages.2.content.1", {"type": "text", "text": ""}), "non-white"),
    "blank string content": (_set("messages.0.content", "   "), "non-whitespace"),
    "empty content list": (_set("messages.0.content", []), "non-empty"),
    "content neither str nor list": (_set("messages.0.content", 7), "non-empty string"),
    "thinking without signature": (
        _set("messages.1.content.0", {"type": "thinking", "thinking": "x"}),
        "signature",
    ),
    "thinking in a user message": (
        _set("messages.0.content", [dict(THINKING)]),
        "not allowed in a user",
    ),
    "tool_result not first": (
        _set("messages.2.content", [{"type": "text", "text": "go on"}, dict(RESULT)]),
        "must come first",
    ),
    "tool_use without result": (
        _set("messages.2.content", [{"type": "text", "text": "go on"}]),
        "without tool_result",
    ),
    "result for another id": (
        _set("messages.2.content.0", {**RESULT, "tool_use_id": "toolu_9"}),
        "unexpected tool_use_id",
    ),
    "result without any call": (
        _messages({"role": "user", "content": [dict(RESULT)]}),
        "unexpected tool_use_id",
    ),
    "tool blocks without tools": (_delete("tools"), "must define tools"),
    "forced tool not in tools": (
        _set("tool_choice", {"type": "tool", "name": "nope"}),
        "not found in tools",
    ),
    "tool_use name malformed": (
        _set("messages.1.content.2", {**CALL, "name": "read file!"}),
        "must match",
    ),
    "tool_use input not an object": (
        _set("messages.1.content.2", {**CALL, "input": "a"}),
        "input",
    ),
    "tool without description": (_set("tools.0", {**TOOLS[0], "description": ""}), "description"),
    "tool without schema": (
        _set("tools.0", {"name": "x", "description": "d", "input_schema": {"type": "string"}}),
        "input_schema",
    ),
    "tool name malformed": (_set("tools.0", {**TOOLS[0], "name": "a b"}), "must match"),
    "duplicate tool names": (_set("tools.1", dict(TOOLS[0])), "unique"),
    "bad cache_control": (
        _set("system.0", {"type": "text", "text": "x", "cache_control": {"type": "forever"}}),
        "ephemeral",
    ),
    "cache_control on thinking": (
        _set("messages.1.content.0", {**THINKING, "cache_control": {"type": "ephemeral"}}),
        "cache_control",
    ),
    "system not text": (_set("system", [{"type": "image", "source": {}}]), "text block"),
    "tool_result with a tool_use inside": (
        _set("messages.2.content.0", {**RESULT, "content": [dict(CALL)]}),
        "text, image or document",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_is_enforced(name: str) -> None:
    change, expected = CASES[name]
    errors = _edit(change)
    assert any(expected in e for e in errors), errors


def test_a_call_of_a_tool_that_does_not_exist_may_stay_in_the_history() -> None:
    """Models do name missing tools; the loop answers is_error and the API accepts the turn."""
    body = valid()
    body["messages"][1]["content"][2]["name"] = "delete_all"
    assert validate_request(body) == []


def test_duplicate_tool_use_ids_are_rejected() -> None:
    body = valid()
    body["messages"] += [
        {"role": "assistant", "content": [dict(CALL)]},
        {"role": "user", "content": [dict(RESULT)]},
    ]
    assert any("unique" in e for e in validate_request(body))


def test_every_call_of_a_turn_must_be_answered() -> None:
    body = valid()
    body["messages"][1]["content"].append({**CALL, "id": "toolu_2", "name": "write_file"})
    errors = validate_request(body)
    assert any("without tool_result" in e and "toolu_2" in e for e in errors), errors
    body["messages"][2]["content"].insert(1, {**RESULT, "tool_use_id": "toolu_2"})
    assert validate_request(body) == []


def _mark(block: dict[str, Any], ttl: str = "5m") -> dict[str, Any]:
    return {**block, "cache_control": {"type": "ephemeral", "ttl": ttl}}


def test_four_breakpoints_pass_and_five_fail() -> None:
    body = valid()
    body["tools"] = [_mark(t) for t in body["tools"]]
    body["system"] = [_mark(b) for b in body["system"]]
    body["messages"][2]["content"][1] = _mark(body["messages"][2]["content"][1])
    assert len(cache_breakpoints(body)) == 4
    assert validate_request(body) == []
    body["messages"][2]["content"][0] = _mark(body["messages"][2]["content"][0])
    assert any("maximum of 4" in e for e in validate_request(body))


def test_top_level_cache_control_counts_as_a_breakpoint() -> None:
    body = valid()
    body["tools"] = [_mark(t) for t in body["tools"]]
    body["system"] = [_mark(b) for b in body["system"]]
    body["messages"][2]["content"][1] = _mark(body["messages"][2]["content"][1])
    body["cache_control"] = {"type": "ephemeral"}
    assert any("maximum of 4" in e for e in validate_request(body))


def test_one_hour_breakpoints_must_come_first() -> None:
    body = valid()
    body["system"] = [_mark(body["system"][0], "5m")]
    body["messages"][2]["content"][1] = _mark(body["messages"][2]["content"][1], "1h")
    assert any("1h" in e for e in validate_request(body))
    body["system"] = [_mark(body["system"][0], "1h")]
    body["messages"][2]["content"][1] = _mark(body["messages"][2]["content"][1], "5m")
    assert validate_request(body) == []


def test_not_a_dict_is_one_clear_error() -> None:
    assert validate_request([1, 2]) == ["request body must be a JSON object"]


RETURNED = [dict(THINKING), {"type": "text", "text": "Ok."}, dict(CALL)]


def test_thinking_untouched_accepts_an_exact_replay() -> None:
    assert check_thinking_untouched([RETURNED], valid()) == []


def test_thinking_untouched_ignores_moved_cache_control() -> None:
    body = valid()
    body["messages"][1]["content"][1] = _mark(body["messages"][1]["content"][1])
    assert check_thinking_untouched([RETURNED], body) == []


@pytest.mark.parametrize(
    ("block", "value"),
    [(0, {**THINKING, "thinking": "edited"}), (0, {**THINKING, "signature": "forged"})],
)
def test_thinking_untouched_rejects_an_edited_thinking_block(block: int, value: Any) -> None:
    body = valid()
    body["messages"][1]["content"][block] = value
    errors = check_thinking_untouched([RETURNED], body)
    assert len(errors) == 1 and "thinking and signature" in errors[0], errors


def test_thinking_untouched_rejects_a_dropped_block_and_an_invented_turn() -> None:
    body = valid()
    body["messages"][1]["content"] = RETURNED[1:]
    assert check_thinking_untouched([RETURNED], body)
    assert check_thinking_untouched([], valid()) == [
        "messages.1: this assistant turn was never returned by the model"
    ]


def test_conversation_checker_follows_several_conversations() -> None:
    checker = ConversationChecker()
    first = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Fix it."}]}
    other = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Other."}]}
    checker.record(first, RETURNED)
    checker.record(other, [{"type": "text", "text": "No."}])
    body = valid()
    body["messages"][0]["content"] = [_mark({"type": "text", "text": "Fix it."})]
    assert checker.check(body) == []
    body["messages"][1]["content"][0] = {**THINKING, "thinking": "changed my mind"}
    assert any("thinking and signature" in e for e in checker.check(body))
    unknown = valid()
    unknown["messages"][0]["content"] = "Unknown"
    assert any("not returned by the model" in e for e in checker.check(unknown))
    reply = [{"role": "assistant", "content": "No."}, {"role": "user", "content": "Why?"}]
    assert checker.check({**other, "messages": other["messages"] + reply}) == []
