"""Thinking signatures bound to their prefix: what changes the prefix, what does not, and the
documented escape hatch."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from cardrunner.apirules.binding import BINDING_BETA, SignatureBinder, mismatch_message
from cardrunner.apirules.validation import validate_request

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def conversation(binder: SignatureBinder, model: str = "claude-sonnet-5-5") -> dict[str, Any]:
    """Two rounds, each answered by the binder as the API would sign them."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "Be careful."}],
        "tools": copy.deepcopy(TOOLS),
        "messages": [{"role": "user", "content": "Fix the card."}],
    }
    for n in (1, 2):
        turn = [
            {"type": "thinking", "thinking": ""},  # empty under the default display
            {"type": "text", "text": f"Reading {n}."},
            {"type": "thinking", "thinking": f"then {n}"},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": "a"}},
        ]
        binder.sign_response(body, turn)
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"text {n}"}
        body["messages"] += [
            {"role": "assistant", "content": turn},
            {"role": "user", "content": [result]},
        ]
    return body


def test_a_faithful_replay_passes_and_moving_cache_control_is_no_edit() -> None:
    binder = SignatureBinder()
    body = conversation(binder)
    assert validate_request(body) == [] and binder.failures(body) == []
    body["system"][0]["cache_control"] = {"type": "ephemeral"}
    body["messages"][2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    body["tools"][0]["cache_control"] = {"type": "ephemeral"}
    assert binder.failures(body) == []


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], list[tuple[int, int]]]] = {
    "system": (lambda b: b["system"][0].update(text="Be quick."), [(1, 0), (1, 2), (3, 0), (3, 2)]),
    "tools": (
        lambda b: b["tools"][0].update(description="Read."),
        [(1, 0), (1, 2), (3, 0), (3, 2)],
    ),
    "model": (lambda b: b.update(model="claude-opus-5-5"), [(1, 0), (1, 2), (3, 0), (3, 2)]),
    "an earlier tool result": (
        lambda b: b["messages"][2]["content"][0].update(content="[compacted]"),
        [(3, 0), (3, 2)],
    ),
    "an earlier block of the same turn": (
        lambda b: b["messages"][3]["content"][1].update(text="Reading two."),
        [(3, 2)],
    ),
    "an empty thinking block left out": (
        lambda b: b["messages"][1]["content"].pop(0),
        [(1, 1), (3, 0), (3, 2)],
    ),
    "the thinking text": (
        lambda b: b["messages"][3]["content"][2].update(thinking="edited"),
        [(3, 2)],
    ),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_every_change_of_the_prefix_fails_the_blocks_after_it(what: str) -> None:
    binder = SignatureBinder()
    body = conversation(binder)
    change, failing = EDITS[what]
    change(body)
    assert binder.failures(body) == failing
    outcome = binder.check(body, {})
    assert outcome.errors == [mismatch_message(i, j) for i, j in failing]
    assert "The block is bound to a different conversation" in outcome.errors[0]


def test_models_without_preserved_thinking_run_no_check() -> None:
    binder = SignatureBinder()
    body = conversation(binder, model="claude-sonnet-5")
    body["system"][0]["text"] = "changed"
    assert binder.failures(body) == []


def test_a_second_binder_with_the_same_key_verifies_what_the_first_issued() -> None:
    body = conversation(SignatureBinder())
    assert SignatureBinder().failures(body) == []
    assert SignatureBinder(b"another key").failures(body) != []


def test_drop_block_needs_its_beta_header_then_drops_the_run_of_thinking() -> None:
    binder = SignatureBinder()
    body = conversation(binder)
    body["messages"][2]["content"][0]["content"] = "[compacted]"
    body["thinking"] = {
        "type": "adaptive",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }
    refused = binder.check(body, {})
    assert refused.errors and BINDING_BETA in refused.errors[0]
    outcome = binder.check(body, {"anthropic-beta": f"other-beta, {BINDING_BETA}"})
    assert outcome.errors == []
    assert [t["path"] for t in outcome.transformations] == [
        "messages.3.content.0",
        "messages.3.content.2",
    ]
    assert {t["reason"] for t in outcome.transformations} == {"prefix_binding_mismatch"}
    assert [b["type"] for b in outcome.body["messages"][3]["content"]] == ["text", "tool_use"]
    assert body["messages"][3]["content"][0]["type"] == "thinking", "the request is not mutated"


def _five_five(**fields: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Hi."}],
        **fields,
    }


FIVE_FIVE_REJECTS = {
    "disabled thinking": (_five_five(thinking={"type": "disabled"}), "between_tools"),
    "between_tools at xhigh": (
        _five_five(thinking={"type": "between_tools"}, output_config={"effort": "xhigh"}),
        "xhigh",
    ),
    "forced tool use without thinking": (
        _five_five(tools=TOOLS, tool_choice={"type": "any"}),
        "forcing tool use",
    ),
    "an unknown display": (
        _five_five(thinking={"type": "adaptive", "display": "loud"}),
        "thinking.display",
    ),
    "a system message first": (
        {**_five_five(), "messages": [{"role": "system", "content": "Rules."}]},
        "first message",
    ),
}


@pytest.mark.parametrize("case", list(FIVE_FIVE_REJECTS))
def test_the_5_5_models_refuse_what_their_pages_say(case: str) -> None:
    body, expected = FIVE_FIVE_REJECTS[case]
    errors = validate_request(body)
    assert any(expected in e for e in errors), errors


def test_a_system_message_mid_conversation_is_accepted_on_5_5_only() -> None:
    messages = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Go on."},
        {"role": "system", "content": [{"type": "text", "text": "The tool set changed."}]},
    ]
    assert validate_request(_five_five(messages=messages)) == []
    assert validate_request(_five_five(thinking={"type": "between_tools"})) == []
    older = {**_five_five(messages=messages), "model": "claude-sonnet-5"}
    assert any("system messages" in e for e in validate_request(older))
