"""Endpoints other than the API, as their documentation says they behave: every run ends Done,
or is refused before any work with a message naming the limit and the setting — never a failure
after paid rounds, never a made-up cost.

The strict fake plays each endpoint (testing/fake_api.py `Endpoint`): Ollama's default 4,096
window told by `/api/show`, DeepSeek (no images, a 400 on `thinking`, no window told), a gateway
that passes thinking on without signatures, llama.cpp with `-c 2048` told by `/props`, and one
that reports no usage. The real SDK talks to it; the tools, git and tests are real.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice, RunStarted
from cardrunner.card.card import load_card
from cardrunner.models.endpoint import PROBE_SYSTEM
from cardrunner.models.shaping import prompt_tokens
from cardrunner.record.log import read_events, read_log
from cardrunner.record.state import RunState
from cardrunner.testing.fake_api import (
    DEEPSEEK,
    MISSING_USAGE,
    OLLAMA,
    SIGNATURE_DROPPING,
    SMALL_WINDOW,
    Endpoint,
)
from tests.support.api_run import ApiRun, run_through_api
from tests.support.project import fix_transcript, git, make_project

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2a1a3d60000000049454e44ae426082"
)


def is_probe(body: dict[str, Any]) -> bool:
    system = body.get("system") or []
    text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    return PROBE_SYSTEM in text or not text


def probe_aware(steps: list[dict[str, Any]]) -> Any:
    """The run's steps in order; the probe's requests answered as a capable model would."""
    queue = list(steps)

    def respond(body: dict[str, Any], index: int) -> dict[str, Any] | None:
        if not is_probe(body):
            return queue.pop(0) if queue else None
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
        if body.get("tools"):
            call = {"type": "tool_use", "name": "echo", "input": {"text": "ok"}}
            think = {"type": "thinking", "thinking": "Call it."}
            return {"content": [think, call], "stop_reason": "tool_use"}
        return {"content": [{"type": "text", "text": "white"}], "stop_reason": "end_turn"}

    return respond


def project(tmp_path: Path, model: str, toml: str = "", image: bool = False) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    card = make_project(root)
    conf = root / "cardrunner.toml"
    text = conf.read_text().replace('model = "claude-sonnet-5-5"', f'model = "{model}"')
    conf.write_text(text + toml)
    if image:
        (root / "cards" / "shot.png").write_bytes(PNG)
        card.write_text(card.read_text().replace("returns -1.", "returns -1.\n\n![bug](shot.png)"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "the endpoint's model")
    return root, card


async def run(root: Path, card: Path, endpoint: Endpoint) -> ApiRun:
    steps = probe_aware(fix_transcript())
    return await run_through_api(root, card, steps, run_chooses_model=True, endpoint=endpoint)


def run_bodies(run: ApiRun) -> list[dict[str, Any]]:
    return [b for b in run.bodies if not is_probe(b)]


def free(model: str) -> str:
    return f'\n[prices."{model}"]\ninput = 0\noutput = 0\ncache_read = 0\ncache_write = 0\n'


def run_violations(run: ApiRun) -> list[str]:
    """What the fake refused of the run's own requests (the probe's refusals are findings)."""
    probes = {i for i, b in enumerate(run.bodies) if is_probe(b)}
    return [
        v
        for v in run.api.violations
        if "call None" not in v and int(v.split("call ")[1].split(":")[0]) not in probes
    ]


async def test_ollama_at_its_default_window_ends_done_inside_it(tmp_path: Path) -> None:
    """Ollama serves 4,096 tokens unless told otherwise: the probe reads that from /api/show,
    and every request's prompt plus its max_tokens stays inside it."""
    root, card = project(tmp_path, "qwen3:8b", free("qwen3:8b"))
    done = await run(root, card, OLLAMA)
    assert (done.result.status, done.result.reason) == ("done", None), done.result.detail
    bodies = run_bodies(done)
    assert len(bodies) == len(fix_transcript())
    assert all(prompt_tokens(b) + b["max_tokens"] <= 4096 for b in bodies)
    assert all("thinking" not in b for b in bodies), "the probe saw no thinking come back"
    assert run_violations(done) == []
    started = next(e for e in done.events if isinstance(e, RunStarted))
    assert any("4,096 tokens (Ollama's default num_ctx" in w for w in started.warnings)


async def test_ollama_with_a_told_window_runs_to_done_without_thinking(tmp_path: Path) -> None:
    """A local model priced 0 says so on its card: the $0 is a setting, not a measurement."""
    told = {"model_info": {"qwen3.context_length": 40960}, "parameters": "num_ctx 32768"}
    endpoint = replace(OLLAMA, window=32768, told=("/api/show", told))
    root, card = project(tmp_path, "qwen3:8b", free("qwen3:8b"))
    done = await run(root, card, endpoint)
    assert (done.result.status, done.result.reason) == ("done", None), done.result.detail
    bodies = run_bodies(done)
    assert bodies and all("thinking" not in b for b in bodies)
    assert all(b["max_tokens"] <= 32768 - prompt_tokens(b) for b in bodies)
    assert run_violations(done) == []
    assert done.result.cost_usd == 0
    record = load_card(card).last_run
    assert record is not None and record.cost_basis == "priced 0"


async def test_deepseek_without_a_window_is_refused_naming_the_setting(tmp_path: Path) -> None:
    root, card = project(tmp_path, "deepseek-chat", free("deepseek-chat"))
    done = await run(root, card, DEEPSEEK)
    assert (done.result.status, done.result.reason) == ("failed", "config_error")
    assert "[models.deepseek-chat] context_window" in done.result.detail
    assert run_bodies(done) == []


async def test_deepseek_runs_to_done_with_the_cards_image_left_out_up_front(
    tmp_path: Path,
) -> None:
    toml = free("deepseek-chat") + '\n[models."deepseek-chat"]\ncontext_window = 128000\n'
    root, card = project(tmp_path, "deepseek-chat", toml, image=True)
    done = await run(root, card, DEEPSEEK)
    assert (done.result.status, done.result.reason) == ("done", None), done.result.detail
    started = next(e for e in done.events if isinstance(e, RunStarted))
    assert any("cards/shot.png" in w and "left out" in w for w in started.warnings)
    bodies = run_bodies(done)
    assert all('"image"' not in str(b) and "thinking" not in b for b in bodies)
    assert run_violations(done) == []


async def test_a_gateway_that_drops_signatures_ends_done(tmp_path: Path) -> None:
    root, card = project(tmp_path, "claude-sonnet-5-5")
    done = await run(root, card, SIGNATURE_DROPPING)
    assert (done.result.status, done.result.reason) == ("done", None), done.result.detail
    done.api.assert_clean()
    later = run_bodies(done)[1:]
    assert later and all("thinking" not in b for b in later)
    assert all(
        blk.get("type") != "thinking" for b in later for m in b["messages"] for blk in m["content"]
    )


async def test_a_first_request_over_a_small_window_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    root, card = project(tmp_path, "tiny", free("tiny"))
    done = await run(root, card, SMALL_WINDOW)
    result = done.result
    assert (result.status, result.reason) == ("failed", "config_error")
    assert "the window of tiny is 2,048" in result.detail
    assert "needs ≥" in result.detail and "[models.tiny] context_window" in result.detail
    assert run_bodies(done) == []
    assert "state: New" in card.read_text(), "the card never went In Work"


async def test_missing_usage_makes_an_estimated_cost_never_a_made_up_one(tmp_path: Path) -> None:
    root, card = project(tmp_path, "claude-sonnet-5-5")
    done = await run(root, card, MISSING_USAGE)
    result = done.result
    assert (result.status, result.reason) == ("done", None), result.detail
    assert result.usage.estimated
    counted = sum(prompt_tokens(b) for b in run_bodies(done))
    assert result.usage.input_tokens == counted
    price = (counted * 2.0 + result.usage.output_tokens * 10.0) / 1e6  # sonnet's $2 / $10
    assert result.usage.output_tokens > 0 and abs(result.cost_usd - price) < 1e-6
    notices = [e.message for e in done.events if isinstance(e, Notice)]
    assert any("estimate" in n for n in notices), notices
    record = load_card(card).last_run
    assert record is not None and record.cost_basis == "estimate"
    assert "cost_basis: estimate" in card.read_text()
    [log] = (root / ".cardrunner" / "runs").glob("*.jsonl")
    lines = list(read_log(log))
    assert [x["data"].get("estimated") for x in lines if x["type"] == "result"] == [True]
    view = RunState(card_path=card, run_id="", title="")
    for event in read_events(lines):
        view.apply(event)
    assert view.totals().endswith("(estimate)") and view.summary().count("~$") == 1
