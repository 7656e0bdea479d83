"""Thinking blocks bound to their prefix, as the preserved-thinking models check them.

On these models each thinking block is bound to everything before it: the model, `system`,
`tools`, every earlier message and the earlier blocks of its own turn. Change any of that after
the block was produced, or leave out or move a thinking block, and the next request is answered
400 ("The block is bound to a different conversation") — not retryable. Moving `cache_control`
markers is how caching works and is not an edit.

The fakes (the scripted model and the fake HTTP server) must fail the same way, or a client that
rewrites its history passes every test and breaks every real run. `SignatureBinder` issues each
thinking block's signature as an HMAC of its canonical prefix and checks it on the way back; the
key is fixed by default so a second fake (a resumed run) verifies what the first one issued, as
the one real API does. A transcript made from a real run (`cardrunner transcript`) carries the
API's own signatures, which no fake can issue: its replay keeps them as recorded and checks the
prefix each was handed out with instead (`keep_recorded`). The documented escape hatch (`drop_block`, behind its beta header) drops
the failing blocks instead and reports each in `input_transformations`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cardrunner.config.model_table import PRESERVED_THINKING

BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The beta header value that unlocks `thinking.block_binding`."""

DROP_BLOCK = "drop_block"
DEFAULT_KEY = b"cardrunner fake Messages API signing key"
_PREFIX = "sig_"


def binds_thinking(model: str) -> bool:
    """True for the models that run the prefix check on thinking blocks."""
    return model in PRESERVED_THINKING


def mismatch_message(i: int, j: int) -> str:
    """The API's 400 message for a thinking block whose prefix changed."""
    return (
        f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is bound"
        " to a different conversation. Remove the block, or set"
        ' `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
    )


def _canonical(value: Any) -> bytes:
    """A block as the check compares it: `cache_control` and null fields left out."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "cache_control" and v is not None}
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def behaviour(body: Mapping[str, Any]) -> str:
    """`thinking.block_binding.prefix_mismatch_behavior` ("error" when not set)."""
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    value = binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None
    return str(value or "error")


def has_beta(headers: Mapping[str, str], beta: str) -> bool:
    """Whether the comma-separated `anthropic-beta` header names `beta`."""
    values = headers.get("anthropic-beta", "")
    return beta in {v.strip() for v in values.split(",")}


@dataclass
class BindingOutcome:
    """What the check found: errors (a 400), or the request with the failing blocks dropped."""

    errors: list[str] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)
    transformations: list[dict[str, str]] = field(default_factory=list)


class SignatureBinder:
    """Issues and checks thinking signatures bound to their prefix."""

    def __init__(self, key: bytes = DEFAULT_KEY, *, keep_recorded: bool = False) -> None:
        """`keep_recorded`: a block handed out with a signature of its own (a transcript's,
        recorded from the real API, whose key no fake has) is checked as if this binder had
        signed it for the prefix it was handed out with: the recorded signature stays as it
        was, and a client that changes that prefix still fails."""
        self._key = key
        self._keep_recorded = keep_recorded
        self._recorded: dict[str, str] = {}
        """A recorded signature → the one this binder would have issued in its place."""

    def _start(self, body: Mapping[str, Any]) -> Any:
        h = hmac.new(self._key, digestmod=hashlib.sha256)
        h.update(b"model:" + _canonical(body.get("model")))
        for block in _blocks(body.get("system")):
            h.update(b"system:" + _canonical(block))
        for tool in body.get("tools") or []:
            h.update(b"tool:" + _canonical(tool))
        return h

    @staticmethod
    def _signature(h: Any, thinking: Any) -> str:
        mine = h.copy()
        mine.update(b"thinking:" + _canonical(thinking))
        return _PREFIX + base64.urlsafe_b64encode(mine.digest()).decode().rstrip("=")

    def sign_response(self, body: Mapping[str, Any], content: list[dict[str, Any]]) -> None:
        """Give every thinking block of `content` (the answer to `body`) its signature, bound to
        the request as sent. A block that already has one (a script imitating a block from
        elsewhere) keeps it."""
        h = self._start(body)
        for message in body.get("messages") or []:
            h.update(b"role:" + _canonical(message.get("role")))
            for block in _blocks(message.get("content")):
                h.update(b"block:" + _canonical(block))
        h.update(b'role:"assistant"')
        for block in content:
            if block.get("type") == "thinking":
                ours = self._signature(h, block.get("thinking", ""))
                recorded = block.get("signature")
                if not recorded:
                    block["signature"] = ours
                elif self._keep_recorded:
                    self._recorded[str(recorded)] = ours
            h.update(b"block:" + _canonical(block))

    def failures(self, body: Mapping[str, Any]) -> list[tuple[int, int]]:
        """(message, block) of every thinking block whose signature does not fit its prefix."""
        if not binds_thinking(str(body.get("model"))):
            return []
        failed: list[tuple[int, int]] = []
        h = self._start(body)
        for i, message in enumerate(body.get("messages") or []):
            role = message.get("role") if isinstance(message, dict) else None
            h.update(b"role:" + _canonical(role))
            content = message.get("content") if isinstance(message, dict) else None
            for j, block in enumerate(_blocks(content)):
                is_thinking = isinstance(block, dict) and block.get("type") == "thinking"
                if is_thinking and role == "assistant":
                    expected = self._signature(h, block.get("thinking", ""))
                    given = str(block.get("signature", ""))
                    if not hmac.compare_digest(self._recorded.get(given, given), expected):
                        failed.append((i, j))
                h.update(b"block:" + _canonical(block))
        return failed

    def check(self, body: dict[str, Any], headers: Mapping[str, str]) -> BindingOutcome:
        """The API's answer to the thinking blocks of `body`: errors, or what it goes on with."""
        mode = behaviour(body)
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and "block_binding" in thinking:
            if not has_beta(headers, BINDING_BETA):
                return BindingOutcome(
                    errors=[
                        "thinking.block_binding: this field needs the beta header"
                        f" `anthropic-beta: {BINDING_BETA}`"
                    ]
                )
            if mode not in ("error", DROP_BLOCK):
                return BindingOutcome(
                    errors=[
                        "thinking.block_binding.prefix_mismatch_behavior: must be"
                        ' "error" or "drop_block"'
                    ]
                )
        failed = self.failures(body)
        if not failed:
            return BindingOutcome(body=body)
        if mode != DROP_BLOCK:
            return BindingOutcome(errors=[mismatch_message(i, j) for i, j in failed])
        return _dropped(body, failed)


def _dropped(body: dict[str, Any], failed: list[tuple[int, int]]) -> BindingOutcome:
    """`body` without the failing blocks and the rest of each one's run of thinking blocks."""
    drop: set[tuple[int, int]] = set()
    messages = body["messages"]
    for i, j in failed:
        content = messages[i]["content"]
        k = j
        while k < len(content) and content[k].get("type") == "thinking":
            drop.add((i, k))
            k += 1
    out = dict(body)
    out["messages"] = [
        {**m, "content": [b for j, b in enumerate(m["content"]) if (i, j) not in drop]}
        if any(d[0] == i for d in drop)
        else m
        for i, m in enumerate(messages)
    ]
    transformations = [
        {
            "type": "thinking_dropped",
            "path": f"messages.{i}.content.{j}",
            "reason": "prefix_binding_mismatch",
        }
        for i, j in sorted(drop)
    ]
    return BindingOutcome(body=out, transformations=transformations)
