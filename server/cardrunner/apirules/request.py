"""The Messages API request body: the one place that decides what is sent and where the cache breakpoints go.

Shared by the real model and the scripted one, so tests check the shape the API really gets."""

from __future__ import annotations

import copy
from typing import Any

from cardrunner.agent.model import ModelRequest
from cardrunner.apirules.binding import BINDING_BETA, DROP_BLOCK

CACHE = {"type": "ephemeral"}


def _mark_last(message: dict[str, Any]) -> None:
    content = message["content"]
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") not in ("thinking", "redacted_thinking"):
            content[i] = {**content[i], "cache_control": CACHE}
            return


def build_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Messages API body. Never carries sampling parameters (`temperature` and friends).

    Cache breakpoints (at most 3 of the API's 4): the system prompt (caching tools + system once),
    the end of the previous user turn (what the previous round wrote, so this round reads it) and
    the end of the newest user turn (what the next round will read).
    """
    messages = [m.wire() for m in request.messages]
    system: list[dict[str, Any]] = [{"type": "text", "text": request.system}]
    if request.cache:
        system[0]["cache_control"] = CACHE
        user_turns = [i for i, m in enumerate(messages) if m["role"] == "user"]
        for i in user_turns[-2:]:
            messages[i] = copy.copy(messages[i])
            messages[i]["content"] = list(messages[i]["content"])
            _mark_last(messages[i])
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": messages,
        "tools": request.tools,
    }
    thinking = _thinking(request)
    if thinking is not None:
        body["thinking"] = thinking
    if request.effort:
        body["output_config"] = {"effort": request.effort}
    return body


def _thinking(request: ModelRequest) -> dict[str, Any] | None:
    """The `thinking` field: its type, the display option and the drop_block opt-in."""
    if request.thinking not in ("adaptive", "between_tools", "disabled"):
        return None
    thinking: dict[str, Any] = {"type": request.thinking}
    if request.display and request.thinking == "adaptive":
        thinking["display"] = request.display
    if request.drop_mismatched_thinking and request.thinking != "disabled":
        thinking["block_binding"] = {"prefix_mismatch_behavior": DROP_BLOCK}
    return thinking


def request_headers(request: ModelRequest) -> dict[str, str]:
    """Headers the body needs: the beta that unlocks `thinking.block_binding`."""
    if request.drop_mismatched_thinking and request.thinking != "disabled":
        return {"anthropic-beta": BINDING_BETA}
    return {}
