"""What an endpoint is asked: the window its server tells, and the probe's profile, which
becomes `[models.NAME]` fields under whatever the user's own `[models.NAME]` sets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import pytest

from cardrunner.config.settings import ModelOverride, Settings
from cardrunner.models.endpoint import probe, profiled, server_window
from cardrunner.testing.fake_api import DEEPSEEK, OLLAMA, Endpoint, FakeMessagesAPI

VLLM_MODELS = {"data": [{"id": "other", "max_model_len": 4096},
                        {"id": "qwen3", "max_model_len": 131072}]}  # fmt: skip


@pytest.mark.parametrize(
    ("told", "window"),
    [
        (("/api/show", {"parameters": "temperature 0.7\nnum_ctx 16384"}), (16384, "num_ctx")),
        (("/api/show", {"model_info": {"llama.context_length": 131072}}), (4096, "default")),
        (("/props", {"default_generation_settings": {"n_ctx": 8192}}), (8192, "/props")),
        (("/v1/models", VLLM_MODELS), (131072, "max_model_len")),
    ],
)
def test_the_window_is_read_from_the_servers_own_answer(
    told: tuple[str, dict[str, Any]], window: tuple[int, str]
) -> None:
    with FakeMessagesAPI([], endpoint=Endpoint(told=told)) as api:
        found = server_window(api.base_url + "/v1", "qwen3")
    assert found is not None and found[0] == window[0] and window[1] in found[1]


def test_a_server_that_tells_no_window_gives_none() -> None:
    with FakeMessagesAPI([]) as api:
        assert server_window(api.base_url, "qwen3") is None


def answer(body: dict[str, Any], index: int) -> dict[str, Any]:
    if body.get("tools") and body["messages"][-1]["role"] == "user":
        think = {"type": "thinking", "thinking": "Call it."}
        call = {"type": "tool_use", "name": "echo", "input": {"text": "ok"}}
        return {"content": [think, call], "stop_reason": "tool_use"}
    return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}


async def profile_of(endpoint: Endpoint, model: str) -> Any:
    async with FakeMessagesAPI(answer, endpoint=endpoint, min_cacheable_tokens=1) as api:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=api.base_url, max_retries=0)
        found = await probe(api.base_url, model, client)
        await client.close()
    return found


async def test_deepseek_is_found_to_take_no_thinking_and_no_images_and_to_tell_no_window() -> None:
    found = await profile_of(DEEPSEEK, "deepseek-chat")
    assert (found.tools, found.thinking, found.images, found.count_tokens) == (
        True, "refused", False, False,
    )  # fmt: skip
    assert found.context_window is None and found.cache == "ignored"
    assert any("unknown variant `image`" in p for p in found.problems), "its words, whole"
    assert found.fields() == {"thinking": "none", "images": False}


async def test_signed_thinking_taken_back_is_kept_and_dropped_signatures_are_not() -> None:
    signed = await profile_of(Endpoint(), "claude-sonnet-5-5")
    assert (signed.thinking, signed.cache, signed.images) == ("signed", "honoured", True)
    assert signed.fields() == {}
    dropped = await profile_of(replace(Endpoint(), thinking="dropped"), "claude-sonnet-5-5")
    assert dropped.thinking == "unsigned" and dropped.tools
    assert (await profile_of(OLLAMA, "qwen3:8b")).fields() == {
        "thinking": "none",
        "context_window": 4096,
    }


def test_the_users_own_models_entry_wins_over_the_profile() -> None:
    from cardrunner.models.endpoint import Profile

    profile = Profile(endpoint="http://x", model="qwen3", thinking="absent", context_window=4096)
    mine = ModelOverride.model_validate({"context_window": 32768})
    settings = Settings(model="qwen3", models={"qwen3": mine})
    spec = profiled(settings, profile).model_spec()
    assert (spec.context_window, spec.thinking) == (32768, "none")


def test_a_kept_profile_comes_back_and_a_hand_edited_one_of_the_wrong_shape_is_ignored(
    tmp_path: Path,
) -> None:
    from cardrunner.models.endpoint import Profile, keep_profile, load_profile, store_path

    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    kept = Profile(endpoint="http://x", model="m", tools=True, context_window=8192)
    keep_profile(kept, env)
    assert load_profile("http://x", "m", env) == kept
    assert load_profile("http://x", "other", env) is None
    data = json.loads(store_path(env).read_text())
    data["http://x m"]["context_window"] = "lots"
    store_path(env).write_text(json.dumps(data))
    assert load_profile("http://x", "m", env) is None
