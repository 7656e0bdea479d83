"""RunManager in-process: model choice, one run per card, cancel, events in order.

The language server is one listener of `RunManager`; these tests are another, with the real
runner, tools and git, and the scripted model.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from cardrunner.agent.events import Event, RunFinished, RunStarted, Usage
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.models.scripted import ScriptedModel
from cardrunner.record.state import RunState
from cardrunner.run.options import MISSING_KEY, RunRefused, replay_path
from cardrunner.run.prepare import choose_model
from cardrunner.workers.manager import RunManager
from tests.support.lsp import (
    GOOD_APP,
    Project,
    final,
    git,
    make_project,
    processes_with,
    report,
    slow_transcript,
    tool,
    turn,
    wait_for,
)
from tests.support.trust import TRUSTED


class Recorder:
    """A listener that keeps every event per card, and the views that ended."""

    def __init__(self) -> None:
        self.events: dict[Path, list[Event]] = {}
        self.ended: list[RunState] = []

    def run_event(self, view: RunState, event: Event) -> None:
        self.events.setdefault(view.card_path, []).append(event)

    def run_ended(self, view: RunState) -> None:
        self.ended.append(view)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")


def manager(project: Project, env: dict[str, str] | None = None) -> RunManager:
    settings, problems = load_settings(project.root)
    assert not problems
    return RunManager(project.root, lambda: settings, env={**TRUSTED, **(env or {})})


def start(runs: RunManager, card: Path, recorder: Recorder) -> RunState:
    """Start the card's run: `recorder` hears it, and its review is accepted."""
    return runs.start(card, listener=recorder, approver=lambda view: AutoApprover())


def test_the_model_comes_from_the_replay_folder_or_the_api(project: Project) -> None:
    settings, _ = load_settings(project.root)
    card = project.write_card("greeting")
    assert replay_path(settings, project.root, card) == project.root / "transcripts/greeting.json"
    project.transcript("greeting", [final()])
    assert isinstance(choose_model(settings, project.root, card, {}), ScriptedModel)

    keyless = settings.model_copy(update={"replay": None})
    with pytest.raises(RunRefused, match="ANTHROPIC_API_KEY"):
        choose_model(keyless, project.root, card, {})
    assert "ANTHROPIC_API_KEY" in MISSING_KEY
    model = choose_model(keyless, project.root, card, {"ANTHROPIC_API_KEY": "sk-test"})
    assert isinstance(model, AnthropicModel)


def test_the_summary_line() -> None:
    view = RunState(Path("c.md"), "r", "t", round=7, max_rounds=60, tokens=31_234, cost_usd=0.181)
    view.tool = "build_app"
    assert view.summary() == "round 7/60 · 31.2k tok · $0.18 · build_app"
    assert Usage(input_tokens=1, output_tokens=2).total == 3


async def test_a_run_reaches_done_with_events_in_order(project: Project) -> None:
    recorder = Recorder()
    runs = manager(project)
    card = project.write_card("greeting")
    project.transcript(
        "greeting",
        [
            turn(tool("write_file", path="src/app.py", content=GOOD_APP)),
            turn(
                tool("read_file", "toolu_read", path="src/app.py"),
                report(1, "hello", "toolu_read", 'f"hello'),
                tool("report_criterion", index=2, passed=False, evidence="no name yet"),
                report(2, "name shown", "toolu_read", "hello {name}"),
                tool("git_commit", message="card: greeting"),
            ),
            final(),
        ],
    )
    view = start(runs, card, recorder)
    assert runs.is_live(card)
    with pytest.raises(RunRefused, match="already running"):
        start(runs, card, recorder)
    await runs.wait(card.resolve())

    events = recorder.events[card.resolve()]
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert view.state == "done" and view.commit and not view.live
    assert [c.status for c in view.criteria] == ["verified", "verified"]
    assert recorder.ended == [view]
    assert git(project.root, "log", "-1", "--format=%s", "HEAD~1").strip() == "card: greeting"
    assert git(project.root, "log", "-1", "--format=%s").strip().endswith("→ Done")


async def test_cancel_ends_cancelled_and_leaves_no_process(project: Project) -> None:
    recorder = Recorder()
    runs = manager(project)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    view = start(runs, card, recorder)
    await wait_for(lambda: processes_with(project.marker), what="the slow command")
    assert runs.cancel(card)
    async with asyncio.timeout(10):
        await runs.wait(card.resolve())
    assert view.state == "failed" and view.reason == "cancelled"
    assert not processes_with(project.marker)
    assert not runs.cancel(card)
    assert "state: Failed" in card.read_text()


async def test_a_missing_transcript_fails_the_run_with_config_error(project: Project) -> None:
    recorder = Recorder()
    runs = manager(project)
    card = project.write_card("orphan")
    view = start(runs, card, recorder)
    await runs.wait(card.resolve())
    assert view.state == "failed" and view.reason == "config_error"
    assert "orphan.json" in view.detail
    assert "state: New" in card.read_text()


async def test_shutdown_cancels_every_run(project: Project) -> None:
    recorder = Recorder()
    runs = manager(project)
    cards = [project.write_card(name) for name in ("a", "b")]
    for card in cards:
        project.transcript(card.stem, slow_transcript())
        start(runs, card, recorder)
    await wait_for(lambda: len(processes_with(project.marker)) == 2, 60, "both commands")
    await runs.aclose()
    assert {v.reason for v in runs.views()} == {"cancelled"}
    assert not processes_with(project.marker)


async def test_cancel_right_after_start_still_ends_the_run(project: Project) -> None:
    recorder = Recorder()
    runs = manager(project)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    view = start(runs, card, recorder)
    assert runs.cancel(card)  # before the run's worker process has even started
    async with asyncio.timeout(10):
        await runs.wait(card.resolve())
    assert view.state == "failed" and view.reason == "cancelled"
    assert recorder.ended == [view] and not runs.is_live(card)
    async with asyncio.timeout(30):
        await runs.aclose()  # and the spare it keeps from now on ends too


async def test_events_reach_the_listener_on_the_callers_loop_and_the_review_crosses(
    project: Project,
) -> None:
    home = asyncio.get_running_loop()
    threads: set[bool] = set()

    class OnHome(Recorder):
        def run_event(self, view: RunState, event: Event) -> None:
            threads.add(asyncio.get_running_loop() is home)
            super().run_event(view, event)

    recorder = OnHome()
    settings, _ = load_settings(project.root)
    approver = AutoApprover()
    runs = RunManager(project.root, lambda: settings)
    card = project.write_card("greeting")
    project.transcript(
        "greeting",
        [
            turn(tool("write_file", path="src/app.py", content=GOOD_APP)),
            turn(tool("git_commit", message="card: greeting")),
            final("RESULT: failed: no evidence on purpose"),
        ],
    )
    view = runs.start(card, listener=recorder, approver=lambda v: approver)
    async with asyncio.timeout(30):
        await runs.wait(card.resolve())
    assert threads == {True} and view.state == "failed" and view.commit
    assert len(approver.requests) == 1  # the approver was called across the processes
    assert approver.requests[0].card_path == card.resolve()
