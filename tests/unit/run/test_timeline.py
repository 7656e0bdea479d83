"""The run as rounds (the editor's run view): read back from a real run's log, as it grows.

A real run (real tools, git, a scripted model) writes its log; the timeline read from it holds
each round's narration, its calls with their results, the criteria as they ended, and the cost;
read from a log cut short it is the run so far, and a live answer keeps only the newest rounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import StatePaths
from cardrunner.models.scripted import ScriptedModel
from cardrunner.record.account import RESULT_CHARS, RunAccounts
from cardrunner.run.options import RunOptions
from cardrunner.run.session import RunSession
from tests.support.project import fix_transcript, make_project


async def run_log(root: Path) -> Path:
    settings, problems = load_settings(root)
    assert not problems, problems
    options = RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        approver=AutoApprover(),
        model=ScriptedModel(fix_transcript()),
    )
    async for _ in RunSession(options).events():
        pass
    [log] = sorted(StatePaths(root).runs.glob("*.jsonl"))
    return log


async def test_each_round_has_its_narration_and_calls_and_the_criteria_tick(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    log = await run_log(tmp_path)
    timeline = RunAccounts().timeline(log, live=False)
    rounds = timeline["rounds"]
    assert [r["round"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert rounds[0]["text"] == "Look at the code first."
    assert [c["name"] for c in rounds[0]["calls"]] == ["list_files"]
    assert rounds[0]["calls"][0]["arguments"] == '{"path": "src"}'
    write = rounds[2]["calls"][0]
    assert write["name"] == "write_file" and '"content": "…"' in write["arguments"]
    tests = next(c for c in rounds[3]["calls"] if c["name"] == "run_tests")
    assert tests["id"] == "toolu_tests" and "1 passed" in tests["result"]
    assert tests["isError"] is False and isinstance(tests["ms"], int)
    assert [c["status"] for c in timeline["criteria"]] == ["verified", "verified"]
    assert timeline["criteria"][0]["evidence"] == "add(2, 3) is 5 in the test"
    assert timeline["state"] == "done" and timeline["omittedRounds"] == 0
    assert timeline["costUsd"] == pytest.approx(sum(r["costUsd"] for r in rounds), abs=1e-4)
    assert all(len(c["result"]) <= RESULT_CHARS for r in rounds for c in r["calls"])


async def test_a_growing_log_gives_the_run_so_far_and_a_live_answer_its_newest_rounds(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    log = await run_log(tmp_path)
    lines = log.read_bytes().splitlines(keepends=True)
    growing = tmp_path / "growing.jsonl"
    cut = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "criterion")
    growing.write_bytes(b"".join(lines[:cut]))
    accounts = RunAccounts()
    before = accounts.timeline(growing, live=True)
    assert [c["status"] for c in before["criteria"]] == ["pending", "pending"]
    assert before["state"] == "running"
    growing.write_bytes(b"".join(lines))  # the rest arrives: the same account reads it on
    after = accounts.timeline(growing, live=True)
    assert [c["status"] for c in after["criteria"]] == ["verified", "verified"]
    assert len(after["rounds"]) > len(before["rounds"])
    assert after["rounds"] == accounts.timeline(growing, live=False)["rounds"][-30:]
