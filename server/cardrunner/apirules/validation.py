"""What the Messages API would reject, checked before a request is answered by a fake.

The real API answers a malformed request with HTTP 400 — in production, after a user's run was
already under way, and in tests never, because tests talk to fakes. Both fakes (the scripted model
and the fake HTTP server) run every request through `validate_request`, so a wiring mistake (an
unpaired tool_use, a tool_result in the wrong place, `temperature`, a fifth cache breakpoint, an
assistant prefill …) fails a test instead of a user's run. `ConversationChecker` adds the rule a
single request cannot show: assistant turns must come back exactly as they were returned.
"""

from __future__ import annotations

from typing import Any

from cardrunner.agent.toolpool import TOOL_NAME_RE
from cardrunner.apirules.binding import binds_thinking
from cardrunner.apirules.blocks import (
    check_block,
    check_breakpoints,
    check_cache_control,
    check_results,
    content_blocks,
)

__all__ = ["validate_request"]


MAX_OUTPUT_TOKENS = 128_000
"""The current models' largest `max_tokens`."""
SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
THINKING_TYPES = frozenset({"adaptive", "disabled", "between_tools"})
"""`enabled` (with `budget_tokens`) is answered with 400 by Sonnet 5 and later."""

EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
_COMMON_KEYS = {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
_COMMON_KEYS |= {"cache_control", "mcp_servers", "context_management", "container", "speed"}
MESSAGES_KEYS = frozenset(
    _COMMON_KEYS
    | {"max_tokens", "metadata", "stop_sequences", "stream"}
    | {"service_tier", "inference_geo", "diagnostics", "user_profile_id", "workspace_id"}
)
COUNT_TOKENS_KEYS = frozenset(_COMMON_KEYS)

_TOOL_KEYS = frozenset({"type", "name", "description", "input_schema", "cache_control", "strict"})


def validate_request(body: Any, *, count_tokens: bool = False) -> list[str]:
    """Every reason the real Messages API would answer `body` with 400 (empty: valid).

    `count_tokens=True` checks a `/v1/messages/count_tokens` body (no `max_tokens`).
    """
    if not isinstance(body, dict):
        return ["request body must be a JSON object"]
    errors: list[str] = []
    _check_top_level(body, count_tokens, errors)
    tool_names = _check_tools(body.get("tools"), errors)
    _check_system(body.get("system"), errors)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        errors.append("messages: must be a non-empty list")
    else:
        _check_messages(messages, errors, binds_thinking(str(body.get("model"))))
        _check_tools_defined(body, messages, tool_names, errors)
    check_breakpoints(body, errors)
    return errors


def _check_top_level(body: dict[str, Any], count_tokens: bool, errors: list[str]) -> None:
    for key in SAMPLING_PARAMS:
        if key in body:
            errors.append(f"{key}: sampling parameters are not supported by this model")
    allowed = COUNT_TOKENS_KEYS if count_tokens else MESSAGES_KEYS
    for key in sorted(set(body) - allowed - set(SAMPLING_PARAMS)):
        errors.append(f"{key}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        errors.append("model: Field required (a non-empty string)")
    if not count_tokens:
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            errors.append("max_tokens: Field required (an integer >= 1)")
        elif max_tokens > MAX_OUTPUT_TOKENS:
            errors.append(f"max_tokens: {max_tokens} > {MAX_OUTPUT_TOKENS}, the model's maximum")
    if "stream" in body and not isinstance(body["stream"], bool):
        errors.append("stream: must be a boolean")
    _check_thinking(body, errors)
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in EFFORTS:
        errors.append(f"output_config.effort: must be one of {sorted(EFFORTS)}")
    if "cache_control" in body:
        check_cache_control(body["cache_control"], "cache_control", errors)


_THINKING_KEYS = frozenset({"type", "display", "block_binding"})
DISPLAYS = frozenset({"summarized", "omitted"})


def _check_thinking(body: dict[str, Any], errors: list[str]) -> None:
    thinking = body.get("thinking")
    choice = body.get("tool_choice")
    forced = isinstance(choice, dict) and choice.get("type") in ("any", "tool")
    preserved = binds_thinking(str(body.get("model")))
    if forced and preserved:
        errors.append(
            "tool_choice: forcing tool use is not supported for this model; use"
            ' tool_choice {"type": "auto"} and say in the prompt which tool to use'
        )
    if thinking is None:
        return
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "enabled":
        errors.append(
            "thinking.type.enabled is not supported for this model; use thinking.type.adaptive"
            " and output_config.effort to control thinking behavior"
        )
    elif kind not in THINKING_TYPES:
        errors.append(f"thinking.type: must be one of {sorted(THINKING_TYPES)}")
    if not isinstance(thinking, dict):
        return
    for key in sorted(set(thinking) - _THINKING_KEYS):
        errors.append(f"thinking.{key}: Extra inputs are not permitted")
    if "display" in thinking and thinking["display"] not in DISPLAYS:
        errors.append(f"thinking.display: must be one of {sorted(DISPLAYS)}")
    if forced and not preserved and kind in ("adaptive", "between_tools"):
        errors.append("tool_choice: forcing tool use is not compatible with thinking")
    if preserved:
        _check_preserved_thinking(body, kind, errors)


def _check_preserved_thinking(body: dict[str, Any], kind: Any, errors: list[str]) -> None:
    """The 5.5 models: no `disabled` (between_tools is the lowest setting), and between_tools
    only at low, medium or high effort."""
    if kind == "disabled":
        errors.append(
            "thinking.type.disabled is not supported for this model; use thinking.type."
            "between_tools to turn off up-front thinking"
        )
    effort = (body.get("output_config") or {}).get("effort")
    if kind == "between_tools" and effort in ("xhigh", "max"):
        errors.append(
            f"thinking.type.between_tools is not supported at effort {effort!r}; use"
            " thinking.type.adaptive (or effort low, medium or high)"
        )


def _check_tools(tools: Any, errors: list[str]) -> set[str]:
    names: set[str] = set()
    if tools is None:
        return names
    if not isinstance(tools, list):
        errors.append("tools: must be a list")
        return names
    for i, tool in enumerate(tools):
        where = f"tools.{i}"
        if not isinstance(tool, dict):
            errors.append(f"{where}: must be an object")
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            errors.append(f"{where}.name: must match {TOOL_NAME_RE.pattern}")
        elif name in names:
            errors.append(f"{where}.name: tool names must be unique ({name!r})")
        else:
            names.add(name)
        if tool.get("type", "custom") != "custom":
            continue  # a server tool (web search …): the API knows its schema
        for key in sorted(set(tool) - _TOOL_KEYS):
            errors.append(f"{where}.{key}: Extra inputs are not permitted")
        if not isinstance(tool.get("description"), str) or not tool["description"].strip():
            errors.append(f"{where}.description: a non-empty description is required")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            errors.append(f'{where}.input_schema: must be a JSON schema with "type": "object"')
        if "cache_control" in tool:
            check_cache_control(tool["cache_control"], f"{where}.cache_control", errors)
    return names


def _check_system(system: Any, errors: list[str]) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        errors.append("system: must be a string or a list of text blocks")
        return
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            errors.append(f"system.{i}: must be a text block")
        else:
            check_block(block, f"system.{i}", "system", errors)


def _check_messages(messages: list[Any], errors: list[str], system_messages: bool) -> None:
    seen_ids: set[str] = set()
    previous_uses: list[str] = []  # tool_use ids of the previous assistant message
    previous_role = None
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if isinstance(message, dict) and message.get("role") == "system":
            _check_system_message(message, i, system_messages, errors)
            continue
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            errors.append(f"{where}: must be an object with role 'user' or 'assistant'")
            previous_role, previous_uses = None, []
            continue
        role = message["role"]
        if i == 0 and role != "user":
            errors.append("messages.0.role: the first message must use the 'user' role")
        if role == previous_role:
            errors.append(f"{where}.role: roles must alternate (two '{role}' messages in a row)")
        blocks = content_blocks(message.get("content"), where, errors)
        for j, block in enumerate(blocks):
            check_block(block, f"{where}.content.{j}", role, errors)
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        for j, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            if block.get("id") in seen_ids:
                errors.append(f"{where}.content.{j}: tool_use ids must be unique ({block['id']})")
            seen_ids.add(str(block.get("id")))
            # A model may name a tool that does not exist; the API accepts that turn in the
            # history (the answer is an is_error tool_result), so names are not checked here.
        if role == "user":
            check_results(blocks, previous_uses, where, errors)
        elif previous_uses:
            errors.append(
                f"{where}: tool_use ids were found without tool_result blocks immediately after: "
                + ", ".join(previous_uses)
            )
        previous_role, previous_uses = role, [str(u) for u in uses]
    if previous_role == "assistant":
        errors.append("messages: the last message must be a user message (no assistant prefill)")


def _check_system_message(
    message: dict[str, Any], i: int, allowed: bool, errors: list[str]
) -> None:
    """A mid-conversation system message (role `system` in `messages`): how the 5.5 models
    take new instructions without an edited `system`. Text only, never first."""
    where = f"messages.{i}"
    if not allowed:
        errors.append(
            f"{where}.role: system messages in `messages` are not supported by this model"
        )
        return
    if i == 0:
        errors.append("messages.0.role: the first message must use the 'user' role")
    for j, block in enumerate(content_blocks(message.get("content"), where, errors)):
        if block.get("type") != "text":
            errors.append(f"{where}.content.{j}: a system message holds text blocks only")
        else:
            check_block(block, f"{where}.content.{j}", "system", errors)


def _check_tools_defined(
    body: dict[str, Any], messages: list[Any], tool_names: set[str], errors: list[str]
) -> None:
    """Tool blocks in the history need `tools`; a forced tool must be one of them."""
    kinds = {
        b.get("type")
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict)
    }
    if kinds & {"tool_use", "tool_result"} and not body.get("tools"):
        errors.append(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        )
    choice = body.get("tool_choice")
    forced = (
        choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None
    )
    if forced is not None and forced not in tool_names:
        errors.append(f"tool_choice.name: tool {forced!r} not found in tools")
