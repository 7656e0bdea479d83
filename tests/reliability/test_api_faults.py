"""Faults from the API injected at every round of a 20-round run: each run completes or ends
`api_error`, none hangs, and every log is complete and readable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.events import RunFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.record.log import read_log
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault
from tests.support.project import final, make_project, turn, use

ROUNDS = 20
FAULTS: dict[str, Any] = {
    "429": lambda: Fault.rate_limited(10),
    "500": Fault.server_error,
    "529": Fault.overloaded,
    "timeout": lambda: Fault.hang(),
    "stream_error": lambda: Fault.stream_error(after_events=3),
    "dropped": lambda: Fault.drop_connection(after_bytes=120),
}


def twenty_rounds() -> list[dict[str, Any]]:
    paths = ["src", "tests", "."]
    steps = [turn(use("list_files", path=paths[i % 3])) for i in range(ROUNDS - 1)]
    return [*steps, final("Looked around.\nRESULT: done")]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template")
    make_project(
        root,
        top_toml="require_evidence = false\n",
        extra_toml="[options]\nrequest_timeout_seconds = 1.0\nmax_retries = 2\nretry_max_delay_seconds = 0.05\n",
    )
    return root


async def _run(
    template: Path, tmp: Path, faults: dict[int, Fault]
) -> tuple[RunFinished, Path, FakeMessagesAPI]:
    import shutil

    root = tmp / "repo"
    shutil.copytree(template, root, symlinks=True)
    settings, problems = load_settings(root)
    assert not problems
    async with FakeMessagesAPI(twenty_rounds(), faults=faults) as api:
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key="sk-test", base_url=api.base_url, max_retries=0, timeout=1.0
        )
        model = AnthropicModel(settings.model, settings.options, client=client)
        options = RunOptions(
            root=root,
            card_path=root / "cards/fix-add.md",
            settings=settings,
            model=model,
            approver=AutoApprover(),
        )
        events = [e async for e in run_card(options)]
        assert not api.violations, api.violations
    result = events[-1]
    assert isinstance(result, RunFinished)
    logs = list((root / ".cardrunner/runs").glob("*.jsonl"))
    assert len(logs) == 1
    return result, logs[0], api


@pytest.mark.parametrize("kind", sorted(FAULTS))
async def test_a_fault_at_every_round(kind: str, template: Path, tmp_path: Path) -> None:
    outcomes = []
    for at in range(ROUNDS):
        # the fault hits the first attempt of round `at`; the retry may succeed
        async with asyncio.timeout(60):
            result, log, _ = await _run(template, tmp_path / f"r{at}", {at: FAULTS[kind]()})
        records = list(read_log(log))
        assert records[0]["type"] == "start" and records[-1]["type"] == "result", "log complete"
        assert records[-1]["data"]["status"] == result.status
        assert result.status == "done" or result.reason == "api_error", (kind, at, result)
        outcomes.append(result.status)
    assert outcomes.count("done") == ROUNDS, f"{kind}: a single fault must be survived by a retry"


async def test_a_fault_that_never_goes_away_ends_api_error_with_a_complete_log(
    template: Path, tmp_path: Path
) -> None:
    faults = {i: Fault.overloaded() for i in range(5, 40)}
    async with asyncio.timeout(60):
        result, log, _api = await _run(template, tmp_path, faults)
    assert result.reason == "api_error" and "529" in result.detail
    assert result.rounds == 5
    records = list(read_log(log))
    assert [r["type"] for r in records].count("round") == 5 and records[-1]["type"] == "result"
    assert "sk-test" not in log.read_text()
