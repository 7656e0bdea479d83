"""A request fitted to its endpoint, its usage checked, its failure said in cardrunner's words.

The body `apirules/request.py` builds is what the Anthropic API takes. An endpoint described
by a profile (models/endpoint.py) or by `[models.NAME]` may take less, so the adapter shapes it
here, the same way on every request (the conversation stays append-only; only what is sent
changes): no `thinking` where the model's kind is `none` (and no thinking blocks sent back,
since nothing could check them), image blocks replaced by a line where `images = false`, and
`max_tokens` fitted into the window left after the prompt. A prompt that by cardrunner's own
count leaves no room for an answer is not sent: `WindowExceeded`, which the loop answers like
the API's window signal (compact, retry once, then a named reason).

Usage is the endpoint's word. A gateway that reports its own guess, or nothing, would make the
cost a made-up figure; so when the reported prompt is missing or far below what cardrunner
counted it sent, the round's usage is cardrunner's count, marked `estimated`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from cardrunner.agent.events import Usage
from cardrunner.agent.model import WindowExceeded

IMAGE_TOKENS = 1_600
"""What an image costs at most in the API's accounting (a 1.15-megapixel picture); its base64
text would count 30–100 times that at 4 characters a token."""
PLAUSIBLE_SHARE = 0.5
"""A reported prompt below this share of cardrunner's own count is taken to be made up."""
THINKING = ("thinking", "redacted_thinking")


def min_output(window: int) -> int:
    """The least room an answer needs: an eighth of the window, between 256 and 4,096 tokens."""
    return max(256, min(4096, window // 8))


def _no_images(blocks: list[Any], model: str) -> list[Any]:
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            out.append(block)
        elif block.get("type") == "image":
            out.append({"type": "text", "text": f"[image left out: {model}'s endpoint takes none]"})
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            out.append({**block, "content": _no_images(block["content"], model)})
        else:
            out.append(block)
    return out


def shape(body: dict[str, Any], *, thinking: bool, images: bool) -> dict[str, Any]:
    """`body` as this endpoint takes it (a new dict; the conversation is never edited)."""
    if thinking and images:
        return body
    body = dict(body)
    messages = []
    for message in body["messages"]:
        content = message["content"]
        if not thinking and message["role"] == "assistant":
            kept = [b for b in content if b.get("type") not in THINKING]
            content = kept or [{"type": "text", "text": "(thinking not sent)"}]
        if not images and isinstance(content, list):
            content = _no_images(content, body["model"])
        messages.append({**message, "content": content})
    body["messages"] = messages
    if not thinking:
        body.pop("thinking", None)
    return body


def _counted_text(value: Any) -> Any:
    """`value` with every image's data left out (counted apart, at `IMAGE_TOKENS`)."""
    if isinstance(value, dict):
        if value.get("type") == "image":
            return {"type": "image"}
        return {k: _counted_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_counted_text(v) for v in value]
    return value


def _images_in(value: Any) -> int:
    if isinstance(value, dict):
        own = 1 if value.get("type") == "image" else 0
        return own + sum(_images_in(v) for v in value.values())
    if isinstance(value, list):
        return sum(_images_in(v) for v in value)
    return 0


def prompt_tokens(body: dict[str, Any]) -> int:
    """cardrunner's own count of a request's prompt: its system, tools and messages at four
    characters a token (the estimate compaction uses), images at `IMAGE_TOKENS` each."""
    parts = {k: body.get(k) for k in ("system", "tools", "messages")}
    text = json.dumps(_counted_text(parts), ensure_ascii=False)
    return math.ceil(len(text) / 4) + IMAGE_TOKENS * _images_in(parts)


def fit(body: dict[str, Any], window: int, model: str, setting: str) -> dict[str, Any]:
    """`body` with `max_tokens` no larger than the room the window leaves after the prompt;
    `WindowExceeded` (nothing sent) when that room is below `min_output`."""
    prompt = prompt_tokens(body)
    room = window - prompt
    if room < min_output(window):
        raise WindowExceeded(
            f"the request needs ≥ {prompt + min_output(window):,} tokens by cardrunner's count "
            f"({prompt:,} of prompt and {min_output(window):,} of answer); the window of "
            f"{model} is {window:,}. Set {setting} to the window the endpoint serves",
            needed=prompt + min_output(window),
            window=window,
        )
    if body["max_tokens"] <= room:
        return body
    return {**body, "max_tokens": room}


def honest(usage: Usage, body: dict[str, Any], content: list[Any]) -> Usage:
    """`usage` as reported, or cardrunner's own count marked `estimated` when the reported
    prompt is missing or implausibly below what was sent (and the output too, if missing)."""
    reported = usage.input_tokens + usage.cache_read_input_tokens
    reported += usage.cache_creation_input_tokens
    own = prompt_tokens(body)
    if reported >= own * PLAUSIBLE_SHARE:
        return usage
    cached = usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    output = usage.output_tokens or math.ceil(len(json.dumps(content, ensure_ascii=False)) / 4)
    return usage.model_copy(
        update={"input_tokens": max(0, own - cached), "output_tokens": output, "estimated": True}
    )


WINDOW_WORDS = re.compile(
    r"context.{0,20}(length|window|size)|exceeds? the (context|available)|maximum context|"
    r"prompt is too long|too many tokens|n_ctx|context_length_exceeded|input is too long",
    re.IGNORECASE,
)
IMAGE_WORDS = re.compile(
    r"\bimages? (input )?(is |are )?(not supported|unsupported|not allowed)|"
    r"unknown variant .?image|does not support (image|vision)",
    re.IGNORECASE,
)
SIGNATURE_WORDS = re.compile(r"signature", re.IGNORECASE)
THINKING_WORDS = re.compile(
    r"thinking.{0,60}(not supported|unsupported|unknown|extra|not permitted)|unknown variant .?thinking|unknown field .?thinking",
    re.IGNORECASE,
)
CACHE_WORDS = re.compile(r"cache_control", re.IGNORECASE)


def explain(status: int | None, text: str, model: str, endpoint: str) -> str | None:
    """What the endpoint lacks and which setting changes it, in cardrunner's words (None: the
    failure is not one an endpoint's abilities explain)."""
    models = f"[models.{model}]"
    if status == 404 and endpoint.endswith("/v1"):
        return (
            f"the endpoint {endpoint} answered 404: its address ends in /v1 and the SDK adds "
            "/v1/messages itself; set ANTHROPIC_BASE_URL (or [endpoint] base_url) without /v1"
        )
    if status == 404:
        return (
            f"the endpoint {endpoint} has no /v1/messages for model {model!r} (404); check the "
            "model name and ANTHROPIC_BASE_URL ([endpoint] base_url)"
        )
    if status in (401, 403):
        return (
            f"the endpoint {endpoint} refused the credentials ({status}): ANTHROPIC_API_KEY or "
            "ANTHROPIC_AUTH_TOKEN (Bedrock: the AWS credentials; Vertex: the application "
            "default credentials)"
        )
    if status is None or status >= 500:
        return None
    if SIGNATURE_WORDS.search(text):
        return (
            f"the endpoint {endpoint} does not take back the thinking signatures it (or a "
            f'gateway before it) returned; set {models} thinking = "none"'
        )
    if THINKING_WORDS.search(text):
        return f'the endpoint {endpoint} takes no thinking; set {models} thinking = "none"'
    if IMAGE_WORDS.search(text):
        return (
            f"the endpoint {endpoint} takes no images; set {models} images = false (a card's "
            "images are then left out, and the run says so when it starts)"
        )
    if CACHE_WORDS.search(text):
        return f"the endpoint {endpoint} refuses cache_control; set [options] cache = false"
    return None


def window_signal(status: int | None, text: str) -> bool:
    """Whether an endpoint's 400 says the conversation is over its context window (the API
    itself says so with the stop reason `model_context_window_exceeded`)."""
    return status in (400, 413, 422) and bool(WINDOW_WORDS.search(text))
