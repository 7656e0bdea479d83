"""Assistant turns must come back as they were returned: the rule a single request cannot show.

`ConversationChecker` remembers each assistant content a fake handed out, keyed by the
conversation that led to it, and checks that later requests replay those turns exactly. The one
documented change is allowed: a turn whose thinking blocks were all removed (what compaction
does to the turns it keeps once earlier ones were rewritten) — the prefix check on signatures
(`binding.py`) is what decides whether the thinking that *is* sent back still fits.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_content(content: Any) -> list[dict[str, Any]]:
    """Content as the API compares it: a string is one text block, `cache_control` (which a
    client may move from round to round) and null-valued fields are left out."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [
        {k: v for k, v in block.items() if k != "cache_control" and v is not None}
        if isinstance(block, dict)
        else {"invalid": repr(block)}
        for block in content
    ]


def _turn_difference(where: str, sent: Any, returned: list[dict[str, Any]]) -> str | None:
    mine, theirs = canonical_content(sent), canonical_content(returned)
    if mine == theirs:
        return None
    for j, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            what = "thinking and signature" if b.get("type") == "thinking" else "every field"
            return (
                f"{where}.content.{j}: this {b.get('type')} block differs from what the model"
                f" returned ({what} must be sent back unchanged)"
            )
    return (
        f"{where}.content: {len(mine)} blocks sent back, but the model returned {len(theirs)};"
        " assistant turns must be sent back block for block"
    )


def check_thinking_untouched(
    previous_responses: list[list[dict[str, Any]]], body: Any
) -> list[str]:
    """The k-th assistant turn of `body` must equal the k-th content returned, block for block."""
    errors: list[str] = []
    turns = [
        (i, m)
        for i, m in enumerate(body.get("messages") or [])
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    for k, (i, message) in enumerate(turns):
        if k >= len(previous_responses):
            errors.append(f"messages.{i}: this assistant turn was never returned by the model")
            continue
        problem = _turn_difference(f"messages.{i}", message.get("content"), previous_responses[k])
        if problem:
            errors.append(problem)
    return errors


def _prefix_key(messages: list[Any]) -> str:
    canonical = [
        {"role": m.get("role"), "content": canonical_content(m.get("content"))}
        if isinstance(m, dict)
        else repr(m)
        for m in messages
    ]
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _stripped_key(content: Any) -> str:
    blocks = [
        b
        for b in canonical_content(content)
        if b.get("type") not in ("thinking", "redacted_thinking")
    ]
    return json.dumps(blocks, sort_keys=True, ensure_ascii=False)


class ConversationChecker:
    """Remembers each assistant content handed out, keyed by the conversation that led to it,
    and checks that later requests replay those turns exactly (thinking and signature untouched).

    Keying by the preceding messages (not by a running position) lets one checker serve several
    conversations at once, and retries of the same request.
    """

    def __init__(self) -> None:
        self._handed_out: dict[str, list[list[dict[str, Any]]]] = {}
        self._stripped: set[str] = set()
        """Every handed-out turn with its thinking removed, wherever it stood."""

    def record(self, body: dict[str, Any], content: list[dict[str, Any]]) -> None:
        """Remember that `content` was the answer to the request `body`."""
        key = _prefix_key(list(body.get("messages") or []))
        self._handed_out.setdefault(key, []).append(canonical_content(content))
        self._stripped.add(_stripped_key(content))

    def _thinking_removed(self, content: Any) -> bool:
        """A handed-out turn with all of its thinking removed: the documented way to keep the
        turns after a rewrite (the prefix check then has nothing of theirs to reject)."""
        blocks = canonical_content(content)
        if any(b.get("type") in ("thinking", "redacted_thinking") for b in blocks):
            return False
        return _stripped_key(blocks) in self._stripped

    def check(self, body: Any) -> list[str]:
        """Every assistant turn of `body` that was not handed out as it appears there."""
        errors: list[str] = []
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            return errors
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            if self._thinking_removed(message.get("content")):
                continue
            candidates = self._handed_out.get(_prefix_key(messages[:i]), [])
            if not candidates:
                errors.append(
                    f"messages.{i}: this assistant turn was not returned by the model after the"
                    " messages before it (edited history, or an invented turn)"
                )
                continue
            problems = [
                _turn_difference(f"messages.{i}", message.get("content"), c) for c in candidates
            ]
            if all(problems):
                errors.append(str(problems[-1]))
        return errors
