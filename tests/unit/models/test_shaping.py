"""A body fitted to its endpoint, usage checked for plausibility, failures in cardrunner's words."""

from __future__ import annotations

import json
import math
from typing import Any

import anthropic
import pytest

from cardrunner.agent.events import Usage
from cardrunner.agent.model import Message, ModelError, ModelRequest, WindowExceeded
from cardrunner.config.settings import ModelOptions
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.models.endpoint import PIXEL
from cardrunner.models.shaping import (
    explain,
    fit,
    honest,
    min_output,
    prompt_tokens,
    shape,
    window_signal,
)
from cardrunner.testing.fake_api import DEEPSEEK, Endpoint, FakeMessagesAPI

BIG = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "A" * 40_000},
}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}


def body(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "m",
        "max_tokens": 8000,
        "system": [{"type": "text", "text": "rules " * 100}],
        "tools": [],
        "thinking": {"type": "adaptive"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "card"}, BIG]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": ""},
                {"type": "tool_use", "id": "t1", "name": "shot", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [BIG]},
            ]},
        ],
    }  # fmt: skip
    return {**base, **over}


def test_an_endpoint_without_thinking_or_images_gets_neither_and_the_conversation_is_untouched() -> (
    None
):
    sent = body()
    before = json.dumps(sent)
    shaped = shape(sent, thinking=False, images=False)
    assert json.dumps(sent) == before, "only what is sent changes"
    assert "thinking" not in shaped
    text = json.dumps(shaped)
    assert '"image"' not in text and '"thinking"' not in text
    assert text.count("image left out: m's endpoint takes none") == 2


def test_images_are_counted_as_the_api_bills_them_not_as_base64_text() -> None:
    assert prompt_tokens(body()) < 2 * 1600 + 1000
    assert prompt_tokens(body()) > 2 * 1600


def test_max_tokens_is_fitted_into_the_window_and_a_prompt_without_room_is_not_sent() -> None:
    sent = body()
    prompt = prompt_tokens(sent)
    assert fit(sent, prompt + 5000, "m", "[models.m] context_window")["max_tokens"] == 5000
    assert fit(sent, prompt + 50_000, "m", "x") is sent
    with pytest.raises(WindowExceeded) as refused:
        fit(sent, prompt + 100, "m", "[models.m] context_window")
    words = str(refused.value)
    needed = prompt + min_output(prompt + 100)
    assert f"needs ≥ {needed:,} tokens" in words and f"is {prompt + 100:,}" in words
    assert "[models.m] context_window" in words


def test_a_reported_prompt_far_below_what_was_sent_becomes_an_estimate() -> None:
    sent = body()
    own = prompt_tokens(sent)
    substituted = Usage(input_tokens=own // 6, output_tokens=40)
    assert honest(substituted, sent, []) == Usage(
        input_tokens=own, output_tokens=40, estimated=True
    )
    measured = Usage(input_tokens=int(own * 0.8), output_tokens=40)
    assert honest(measured, sent, []) == measured, "a different tokenizer is not a made-up figure"
    content = [{"type": "text", "text": "x" * 400}]
    missing = honest(Usage(), sent, content)
    assert missing.estimated and missing.output_tokens == math.ceil(len(json.dumps(content)) / 4)


@pytest.mark.parametrize(
    ("status", "text", "words"),
    [
        (400, "unknown variant `image`, expected `text` at line 1 column 4012", "images = false"),
        (400, "Image input is not supported for this model", "images = false"),
        (400, "Invalid `signature` in `thinking` block", 'thinking = "none"'),
        (400, "unknown field `thinking`, expected one of `model`", 'thinking = "none"'),
        (400, "cache_control: Extra inputs are not permitted", "cache = false"),
        (401, "invalid key", "ANTHROPIC_API_KEY"),
        (404, "Not Found", "model name and ANTHROPIC_BASE_URL"),
    ],
)
def test_an_endpoints_refusal_names_what_it_lacks_and_the_setting(
    status: int, text: str, words: str
) -> None:
    said = explain(status, text, "m", "http://gw")
    assert said is not None and words in said and "http://gw" in said


def test_a_v1_base_url_is_named_as_the_cause_of_a_404() -> None:
    said = explain(404, "Not Found", "m", "http://localhost:11434/v1")
    assert said is not None and "without /v1" in said


@pytest.mark.parametrize(
    "text",
    [
        "the request exceeds the available context size, try increasing it",  # llama.cpp
        "This model's maximum context length is 4096 tokens. However, you requested 5000",  # vLLM
        "prompt is too long: 210000 tokens > 200000 maximum",  # the API's own words
    ],
)
def test_an_endpoints_window_answer_is_the_window_signal(text: str) -> None:
    assert window_signal(400, text)
    assert not window_signal(400, "messages.0.content: Field required")
    assert explain(500, text, "m", "x") is None


def request(text: str = "Fix it.") -> ModelRequest:
    hello = Message("user", [{"type": "text", "text": text}])
    return ModelRequest(system="You fix.", tools=[], messages=[hello], max_tokens=1000)


async def test_the_endpoints_text_is_kept_whole_and_its_window_answer_is_a_window_signal() -> None:
    async with FakeMessagesAPI([], endpoint=DEEPSEEK) as api:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=api.base_url, max_retries=0)
        model = AnthropicModel("deepseek-chat", ModelOptions(max_retries=0), client=client)
        shot = Message("user", [{"type": "text", "text": "see"}, IMAGE])
        asked = ModelRequest(system="s", tools=[], messages=[shot], max_tokens=100)
        with pytest.raises(ModelError) as failed:
            await model.respond(asked)
        await client.close()
    assert "[models.deepseek-chat] images = false" in str(failed.value)
    assert "unknown variant `image`, expected `text` at line 1 column 4012" in failed.value.said
    small = Endpoint(window=300)
    async with FakeMessagesAPI([], endpoint=small) as api:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=api.base_url, max_retries=0)
        model = AnthropicModel(
            "m", ModelOptions(max_retries=0, context_window=100_000), client=client
        )
        with pytest.raises(WindowExceeded) as over:
            await model.respond(request("word " * 400))
        await client.close()
    assert "[models.m] context_window" in str(over.value)
    assert "exceeds the available context size" in over.value.said
