"""A card through LiteLLM's real proxy in front of an OpenAI-compatible model: Done, with the
tokens and the cost of what the model processed.

LiteLLM (pinned in .ci/run, in a venv of its own: its proxy pins older `mcp`, `rich` and
`uvicorn` than cardrunner's) translates cardrunner's Messages requests to
`/v1/chat/completions` of the scripted model (tests/support/openai_backend.py), which reports
its own count of each request as usage. The run's tokens and cost must be exactly those.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from unittest import mock

import pytest

from cardrunner.agent.events import RoundFinished, RunFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.api_run import settings_of
from tests.support.openai_backend import OpenAIBackend
from tests.support.project import fix_transcript, git, make_project

LITELLM = Path(os.environ.get("CARDRUNNER_LITELLM", "/nonexistent/litellm"))
"""Set by .ci/run; where it is set, a missing proxy fails the test instead of skipping it."""
CONFIG = """model_list:
  - model_name: house-model
    litellm_params:
      model: openai/house-model
      api_base: {api_base}
      api_key: sk-backend
litellm_settings:
  use_chat_completions_url_for_anthropic_messages: true
"""
TOML = """
[models.house-model]
context_window = 32000

[prices.house-model]
input = 1.0
output = 5.0
cache_read = 0.1
cache_write = 1.25
"""

pytestmark = pytest.mark.skipif(
    "CARDRUNNER_LITELLM" not in os.environ,
    reason="CARDRUNNER_LITELLM does not name LiteLLM's proxy (.ci/run installs it)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2):
            return True
    except OSError:
        return False


async def until_ready(url: str, proxy: subprocess.Popen[bytes]) -> None:
    """Ask the proxy's liveliness route until it answers (it takes seconds to import)."""
    deadline = time.monotonic() + 120
    while not await asyncio.to_thread(alive, url):
        assert proxy.poll() is None, "LiteLLM's proxy exited"
        assert time.monotonic() < deadline, "LiteLLM's proxy did not start in 120 s"
        await asyncio.sleep(0.2)


def start(argv: list[str], folder: Path) -> subprocess.Popen[bytes]:
    with open(folder / "litellm.log", "wb") as log:
        return subprocess.Popen(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT)


async def test_a_card_through_litellm_is_done_at_the_backends_own_count(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    conf = root / "cardrunner.toml"
    conf.write_text(conf.read_text().replace("claude-sonnet-5-5", "house-model") + TOML)
    git(root, "commit", "-qam", "the gateway's model")
    steps = [dict(s, content=[b for b in s["content"] if b["type"] != "thinking"])
             for s in fix_transcript()]  # fmt: skip
    async with OpenAIBackend(steps) as backend:
        (tmp_path / "litellm.yaml").write_text(CONFIG.format(api_base=backend.base_url))
        port = free_port()
        argv = [
            str(LITELLM),
            "--config",
            "litellm.yaml",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        proxy = await asyncio.to_thread(start, argv, tmp_path)
        try:
            url = f"http://127.0.0.1:{port}"
            await until_ready(url, proxy)
            env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-gateway"}
            with mock.patch.dict(os.environ, env):
                options = RunOptions(
                    root=root, card_path=card, settings=settings_of(root), approver=AutoApprover()
                )
                events = [e async for e in run_card(options)]
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)
    result = events[-1]
    assert isinstance(result, RunFinished)
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert (result.status, result.reason) == ("done", None), result.detail
    ours = backend.run_requests()
    assert len(ours) == len(steps) == len(rounds), "each step played by the run, none by the probe"
    processed = sum(backend.prompt_tokens[i] for i in ours)
    written = sum(backend.completion_tokens[i] for i in ours)
    usage = result.usage
    assert not usage.estimated
    assert usage.input_tokens + usage.cache_read_input_tokens == processed
    assert usage.output_tokens == written
    assert result.cost_usd == pytest.approx((processed * 1.0 + written * 5.0) / 1e6, abs=1e-6)
