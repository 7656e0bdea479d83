"""A finished message as the exact sequence of server-sent events the Messages API streams.

`message_start` (empty content, input usage), a `ping`, then per block `content_block_start`,
its deltas (`text_delta`; `input_json_delta` carrying the tool input as partial JSON in a few
chunks; `thinking_delta` then one `signature_delta`) and `content_block_stop`, then
`message_delta` (stop reason and the cumulative usage) and `message_stop`. Chunking the deltas
makes clients prove that they assemble blocks instead of expecting one piece each.
"""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str, dict[str, Any]]
_DELTA_USAGE = frozenset(
    {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
)


def encode(name: str, data: dict[str, Any]) -> bytes:
    """One SSE frame: `event: NAME`, `data: JSON`, blank line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def chunks(text: str, pieces: int = 3) -> list[str]:
    """`text` cut into at most `pieces` non-empty parts (none for an empty text)."""
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def message_events(message: dict[str, Any], pieces: int = 3) -> list[Event]:
    """Every event of streaming `message` (a complete non-streaming response body)."""
    usage = dict(message["usage"])
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[Event] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block, pieces)
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {k: v for k, v in usage.items() if k in _DELTA_USAGE},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(index: int, block: dict[str, Any], pieces: int) -> list[Event]:
    kind = block["type"]
    first: dict[str, Any]
    if kind == "text":
        first = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": t} for t in chunks(block["text"], pieces)]
    elif kind == "tool_use":
        first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        partial = json.dumps(block["input"], ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [{"type": "input_json_delta", "partial_json": p} for p in chunks(partial, pieces)]
    elif kind == "thinking":
        first = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": t} for t in chunks(block["thinking"], pieces)
        ]
        if "signature" in block:  # a gateway may pass thinking on without it
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:  # redacted_thinking arrives whole
        first, deltas = dict(block), []
    events: list[Event] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": first},
        ),
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events
