"""The rules for content blocks: roles, tool results, images, cache_control and breakpoints.

Split from `validation.py`, which checks a request's shape and its conversation; these are the
checks every single block goes through wherever it appears (system, messages, tool results).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cardrunner.agent.toolpool import TOOL_NAME_RE

BLOCK_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "title", "context", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}

MAX_BREAKPOINTS = 4
"""At most this many `cache_control` breakpoints, the top-level automatic one included."""

_ROLE_OF = {"tool_use": "assistant", "thinking": "assistant", "redacted_thinking": "assistant"}
_ROLE_OF |= {"tool_result": "user", "image": "user", "document": "user"}
_RESULT_CONTENT_TYPES = frozenset({"text", "image", "document"})


def content_blocks(content: Any, where: str, errors: list[str]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        if not content.strip():
            errors.append(f"{where}.content: must contain non-whitespace text")
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list) or not content:
        errors.append(f"{where}.content: must be a non-empty string or list of blocks")
        return []
    blocks = [b for b in content if isinstance(b, dict)]
    if len(blocks) != len(content):
        errors.append(f"{where}.content: every block must be an object")
    return blocks


def check_block(block: dict[str, Any], where: str, role: str, errors: list[str]) -> None:
    kind = block.get("type")
    if kind not in BLOCK_KEYS:
        errors.append(f"{where}.type: unknown content block type {kind!r}")
        return
    for key in sorted(set(block) - BLOCK_KEYS[kind]):  # thinking blocks take no cache_control
        errors.append(f"{where}.{key}: Extra inputs are not permitted")
    if _ROLE_OF.get(kind, role) != role:
        errors.append(f"{where}: {kind} blocks are not allowed in a {role} message")
    if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"].strip()):
        errors.append(f"{where}: text content blocks must contain non-whitespace text")
    elif kind == "thinking":
        if not isinstance(block.get("thinking"), str):
            errors.append(f"{where}.thinking: Field required")
        if not isinstance(block.get("signature"), str) or not block["signature"]:
            errors.append(f"{where}.signature: thinking blocks must carry their signature")
    elif kind == "redacted_thinking" and not isinstance(block.get("data"), str):
        errors.append(f"{where}.data: Field required")
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not block["id"]:
            errors.append(f"{where}.id: Field required")
        if not isinstance(block.get("name"), str) or not TOOL_NAME_RE.match(block["name"]):
            errors.append(f"{where}.name: must match {TOOL_NAME_RE.pattern}")
        if not isinstance(block.get("input"), dict):
            errors.append(f"{where}.input: must be an object")
    elif kind == "tool_result":
        check_result_content(block, where, errors)
    elif kind in ("image", "document") and not isinstance(block.get("source"), dict):
        errors.append(f"{where}.source: Field required")
    elif kind == "image":
        check_image_source(block["source"], f"{where}.source", errors)
    if "cache_control" in block:
        check_cache_control(block["cache_control"], f"{where}.cache_control", errors)


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The API's limit for one image (decoded)."""
_MAGIC: dict[str, tuple[bytes, ...]] = {"image/png": (b"\x89PNG\r\n\x1a\n",)}
_MAGIC |= {"image/jpeg": (b"\xff\xd8\xff",)}
_MAGIC |= {"image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}


def check_image_source(source: dict[str, Any], where: str, errors: list[str]) -> None:
    """A base64 image: a media type the API takes, valid base64, within 5 MB, and bytes that
    are what the media type says (the API answers a mismatch with 400); or a url."""
    kind = source.get("type")
    if kind == "url":
        if not isinstance(source.get("url"), str) or not source["url"]:
            errors.append(f"{where}.url: Field required")
        return
    if kind != "base64":
        errors.append(f"{where}.type: must be 'base64' or 'url'")
        return
    media_type = source.get("media_type")
    if media_type not in IMAGE_TYPES:
        errors.append(f"{where}.media_type: must be one of {', '.join(sorted(IMAGE_TYPES))}")
        return
    try:
        data = base64.b64decode(str(source.get("data", "")), validate=True)
    except (binascii.Error, ValueError):
        errors.append(f"{where}.data: invalid base64 data")
        return
    if not data:
        errors.append(f"{where}.data: image data is empty")
    elif len(data) > MAX_IMAGE_BYTES:
        errors.append(f"{where}: image exceeds 5 MB maximum: {len(data)} bytes")
    elif not data.startswith(_MAGIC[media_type]) or (
        media_type == "image/webp" and data[8:12] != b"WEBP"
    ):
        errors.append(f"{where}: the image does not match the provided media type {media_type}")


def check_result_content(block: dict[str, Any], where: str, errors: list[str]) -> None:
    if not isinstance(block.get("tool_use_id"), str):
        errors.append(f"{where}.tool_use_id: Field required")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        errors.append(f"{where}.is_error: must be a boolean")
    content = block.get("content", "")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        errors.append(f"{where}.content: must be a string or a list of blocks")
        return
    for k, inner in enumerate(content):
        if not isinstance(inner, dict) or inner.get("type") not in _RESULT_CONTENT_TYPES:
            errors.append(f"{where}.content.{k}: must be a text, image or document block")
        else:
            check_block(inner, f"{where}.content.{k}", "user", errors)


def check_results(
    blocks: list[dict[str, Any]], expected: list[str], where: str, errors: list[str]
) -> None:
    results = [b for b in blocks if b.get("type") == "tool_result"]
    answered = [str(b.get("tool_use_id")) for b in results]
    missing = [u for u in expected if u not in answered]
    if missing:
        errors.append(
            f"{where}: tool_use ids were found without tool_result blocks immediately after: "
            + ", ".join(missing)
        )
    unexpected = [a for a in answered if a not in expected]
    if unexpected:
        errors.append(
            f"{where}: unexpected tool_use_id found in tool_result blocks: "
            + ", ".join(unexpected)
            + ". Each tool_result block must have a corresponding tool_use block in the"
            " previous message."
        )
    if len(set(answered)) != len(answered):
        errors.append(f"{where}: each tool_use id may be answered by one tool_result only")
    kinds = [b.get("type") for b in blocks]
    if results and kinds[: len(results)] != ["tool_result"] * len(results):
        errors.append(f"{where}: tool_result blocks must come first in the user message")


def check_cache_control(value: Any, where: str, errors: list[str]) -> None:
    if not isinstance(value, dict) or value.get("type") != "ephemeral":
        errors.append(f'{where}: must be {{"type": "ephemeral"}}')
    elif value.get("ttl", "5m") not in ("5m", "1h"):
        errors.append(f"{where}.ttl: must be '5m' or '1h'")


def cache_breakpoints(body: dict[str, Any]) -> list[str]:
    """The TTL of every `cache_control` breakpoint in canonical order (tools, system, messages),
    the top-level automatic one last."""
    ttls: list[str] = []

    def visit(block: Any) -> None:
        if isinstance(block, dict):
            if isinstance(block.get("cache_control"), dict):
                ttls.append(str(block["cache_control"].get("ttl", "5m")))
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                for inner in block["content"]:
                    visit(inner)

    for tool in body.get("tools") or []:
        visit(tool)
    if isinstance(body.get("system"), list):
        for block in body["system"]:
            visit(block)
    for message in body.get("messages") or []:
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                visit(block)
    if isinstance(body.get("cache_control"), dict):
        ttls.append(str(body["cache_control"].get("ttl", "5m")))
    return ttls


def check_breakpoints(body: dict[str, Any], errors: list[str]) -> None:
    ttls = cache_breakpoints(body)
    if len(ttls) > MAX_BREAKPOINTS:
        errors.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided."
            f" Found {len(ttls)} (the top-level cache_control counts as one)."
        )
    if "1h" in ttls and "5m" in ttls[: len(ttls) - ttls[::-1].index("1h")]:
        errors.append("cache_control: a 'ttl'='1h' breakpoint may not come after a '5m' one")
