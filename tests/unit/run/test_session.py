"""`RunSession`: every way a run can end gives exactly one `RunFinished`, last.

A real project in a git repository, the real tools, a scripted model; what varies is where the
run stops: refused while preparing or by a front end's preflight, cancelled while preparing, a
card store that fails when the run starts or when it ends.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Event, Notice, RunFinished, RunStarted
from cardrunner.agent.review import AutoApprover
from cardrunner.card.card import DiskCardStore
from cardrunner.card.record import CardUpdate
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import StatePaths
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.liveness import CardBusy, CardLock
from cardrunner.run.options import RunOptions, RunRefused
from cardrunner.run.session import RunSession
from tests.support.project import fix_transcript, make_project
from tests.support.trust import TRUSTED


def options(root: Path, **fields: Any) -> RunOptions:
    settings, problems = load_settings(root)
    assert not problems, problems
    return RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        approver=AutoApprover(),
        env=TRUSTED,
        **fields,
    )


async def events_of(opts: RunOptions) -> list[Event]:
    events = [e async for e in RunSession(opts).events()]
    assert [type(e) for e in events].count(RunFinished) == 1
    assert isinstance(events[-1], RunFinished)
    return events


class FailingStore(DiskCardStore):
    """Writes like the disk store, but fails on one state."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on, self.states = fail_on, []

    async def update(self, path: Path, change: CardUpdate) -> None:
        self.states.append(change.state)
        if change.state == self.fail_on:
            raise RuntimeError(f"the editor refused the {change.state} edit")
        await super().update(path, change)


async def test_a_refusal_while_preparing_is_the_runs_one_result(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    before = card.read_text()
    events = await events_of(options(tmp_path))
    result = events[-1]
    assert len(events) == 1 and isinstance(result, RunFinished)
    assert result.reason == "config_error" and "ANTHROPIC_API_KEY" in result.detail
    assert card.read_text() == before


async def test_a_missing_resume_is_refused_the_same_way(tmp_path: Path) -> None:
    from cardrunner.run.options import ResumeGrant

    make_project(tmp_path)
    opts = options(tmp_path, model=ScriptedModel(fix_transcript()), resume=ResumeGrant())
    result = (await events_of(opts))[-1]
    assert isinstance(result, RunFinished) and result.reason == "config_error"
    assert result.detail.startswith("cannot resume: fix-add.md has no unfinished run")


class Preflight:
    """A front end's preflight that records what it saw: was the card held, was it called."""

    def __init__(self, root: Path, refuse: str | None = None, notes: list[str] | None = None):
        self.root, self.refuse, self.notes = root, refuse, notes or []
        self.card_was_held: list[bool] = []

    async def __call__(self) -> list[str]:
        try:
            CardLock.acquire(self.root, Path("cards/fix-add.md")).release()
            self.card_was_held.append(False)
        except CardBusy:
            self.card_was_held.append(True)
        if self.refuse is not None:
            raise RunRefused(self.refuse)
        return self.notes


def run_logs(root: Path) -> list[Path]:
    return sorted(StatePaths(root).runs.glob("*.jsonl")) if StatePaths(root).runs.exists() else []


async def test_a_preflight_refusal_ends_like_a_refusal_while_preparing(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    before = card.read_text()
    preflight = Preflight(tmp_path, refuse="the branch is taken")
    model = ScriptedModel(fix_transcript())
    events = await events_of(options(tmp_path, model=model, preflight=preflight))
    result = events[-1]
    assert len(events) == 1 and isinstance(result, RunFinished)
    assert (result.reason, result.detail) == ("config_error", "the branch is taken")
    assert preflight.card_was_held == [True]  # under the card's lock, as every run's start
    assert model.requests == [] and run_logs(tmp_path) == []  # nothing opened, nothing spent
    assert card.read_text() == before
    CardLock.acquire(tmp_path, Path("cards/fix-add.md")).release()  # and the lock is let go


async def test_a_preflight_comes_after_the_preparation(tmp_path: Path) -> None:
    make_project(tmp_path)
    preflight = Preflight(tmp_path)
    result = (await events_of(options(tmp_path, preflight=preflight)))[-1]  # no key, no model
    assert isinstance(result, RunFinished) and "ANTHROPIC_API_KEY" in result.detail
    assert preflight.card_was_held == []  # a run that cannot start is never checked further


async def test_a_preflights_notes_are_logged_and_shown_after_the_start(tmp_path: Path) -> None:
    make_project(tmp_path)
    preflight = Preflight(tmp_path, notes=["working on the branch cards/fix-add"])
    opts = options(tmp_path, model=ScriptedModel(fix_transcript()), preflight=preflight)
    events = await events_of(opts)
    assert isinstance(events[0], RunStarted)
    assert events[1] == Notice(message="working on the branch cards/fix-add", time=events[1].time)
    [log] = run_logs(tmp_path)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["type"] for line in lines[:2]] == ["start", "notice"]
    assert lines[1]["data"]["message"] == "working on the branch cards/fix-add"
    assert lines[-1]["type"] == "result" and lines[-1]["data"]["status"] == "done"


async def test_cancelled_while_preparing_ends_cancelled(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    seen: list[Event] = []

    async def consume() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # as the run manager does: the session gets it at its first await
        async for event in RunSession(options(tmp_path, model=ScriptedModel([]))).events():
            seen.append(event)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(30):
        await asyncio.gather(task, return_exceptions=True)
    assert len(seen) == 1 and isinstance(seen[0], RunFinished)
    assert seen[0].reason == "cancelled" and seen[0].detail.endswith("before it started")
    assert "state: New" in card.read_text()


async def test_a_store_that_fails_at_the_start_ends_the_run_interrupted(tmp_path: Path) -> None:
    make_project(tmp_path)
    store = FailingStore("In Work")
    opts = options(tmp_path, model=ScriptedModel(fix_transcript()), card_store=store)
    events = await events_of(opts)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.reason == "interrupted"
    assert "the editor refused the In Work edit" in result.detail
    assert store.states == ["In Work"]  # a card that never went In Work is not marked Failed


async def test_a_store_that_fails_at_the_end_keeps_the_result(tmp_path: Path) -> None:
    make_project(tmp_path)
    store = FailingStore("Done")
    opts = options(tmp_path, model=ScriptedModel(fix_transcript()), card_store=store)
    events = await events_of(opts)
    assert isinstance(events[0], RunStarted)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("could not write the result to the card" in n for n in notices), notices
    assert store.states == ["In Work", "Done"]
