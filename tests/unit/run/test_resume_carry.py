"""A resume after HEAD moved outside the write area: the log's fingerprints are carried over.

A fingerprint of the write area is HEAD's tree with the write area on it. Between a run's stop
and its resume HEAD moves for reasons that touch no file of the write area: the card's state is
committed (the language server's worker does that for an interrupted run), the user commits
elsewhere, an isolated resume gets a fresh worktree on the branch as it is now. Evidence on the
write area as it still is must hold then; evidence whose files changed must still be refused.
A real project in a git repository, the real tools and a scripted model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.events import Event, RunFinished, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.config.settings import BUILD_OUTPUT
from cardrunner.git.repo import GitRepo
from cardrunner.models.scripted import ScriptedModel
from cardrunner.processes.groups import ProcessGroups
from cardrunner.run.options import ResumeGrant, RunOptions
from cardrunner.run.session import RunSession
from cardrunner.run.workarea import carried
from tests.support.project import FIXED, fix_transcript, git, make_project
from tests.support.trust import TRUSTED

GROUPS = ProcessGroups()
ROUNDS_BEFORE_THE_STOP = 4
"""list, read, write the fix, build and test: the evidence's calls are all made, none cited."""


def options(root: Path, steps: list[Any], **overrides: Any) -> RunOptions:
    settings, problems = load_settings(root, overrides or None)
    assert not problems, problems
    return RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        model=ScriptedModel(steps),
        approver=AutoApprover(),
        processes=GROUPS,
        env=TRUSTED,
    )


async def events_of(opts: RunOptions) -> list[Event]:
    events = [e async for e in RunSession(opts).events()]
    assert isinstance(events[-1], RunFinished)
    return events


def commit_outside_the_write_area(root: Path) -> None:
    """HEAD moves, no file under `src` changes: the card, as the stopped run left it, committed."""
    card = root / "cards/fix-add.md"
    card.write_text(card.read_text() + "\nNoted after the run stopped.\n")
    git(root, "commit", "-qm", "card: → Failed (interrupted)", "--", "cards/fix-add.md")


def reports(events: list[Event]) -> list[ToolFinished]:
    return [e for e in events if isinstance(e, ToolFinished) and e.name == "report_criterion"]


async def stopped_run(root: Path, isolation: bool) -> None:
    """The fix written, built and tested; the run stops (max_rounds) before it reports."""
    opts = options(
        root, fix_transcript(), isolation=isolation, limits={"max_rounds": ROUNDS_BEFORE_THE_STOP}
    )
    result = (await events_of(opts))[-1]
    assert isinstance(result, RunFinished) and result.reason == "max_rounds", result


async def resumed(root: Path, isolation: bool) -> list[Event]:
    opts = options(root, fix_transcript(), isolation=isolation)
    opts.resume = ResumeGrant(rounds=5)
    return await events_of(opts)


async def test_a_snapshot_carried_onto_a_moved_head_is_the_one_taken_now(tmp_path: Path) -> None:
    make_project(tmp_path)
    repo = GitRepo(tmp_path, BUILD_OUTPUT)
    (tmp_path / "src/calc.py").write_text(FIXED)
    (tmp_path / "src/new.py").write_text("NEW = 1\n")
    (tmp_path / "src/__init__.py").unlink()
    then = await repo.snapshot(["src"])
    commit_outside_the_write_area(tmp_path)
    now = await repo.snapshot(["src"])
    assert then != now, "HEAD moved: the fingerprint of the same files differs (the regression)"
    assert (await carried(repo, ["src"], [then]))[then] == now
    assert (await carried(repo, ["src"], [now]))[now] == now, "carrying twice changes nothing"


@pytest.mark.parametrize("change", ["edit", "add", "delete"])
async def test_a_carried_snapshot_of_other_files_still_differs(tmp_path: Path, change: str) -> None:
    make_project(tmp_path)
    repo = GitRepo(tmp_path, BUILD_OUTPUT)
    then = await repo.snapshot(["src"])
    commit_outside_the_write_area(tmp_path)
    match change:
        case "edit":
            (tmp_path / "src/calc.py").write_text(FIXED)
        case "add":
            (tmp_path / "src/new.py").write_text("")
        case "delete":
            (tmp_path / "src/__init__.py").unlink()
    assert (await carried(repo, ["src"], [then]))[then] != await repo.snapshot(["src"])


async def test_what_is_not_a_tree_git_has_stays_as_it_is(tmp_path: Path) -> None:
    make_project(tmp_path)
    repo = GitRepo(tmp_path, BUILD_OUTPUT)
    odd = ["", "unknown", "0" * 40]  # a log's placeholders, an object pruned since
    assert await carried(repo, ["src"], odd) == {t: t for t in odd}


@pytest.mark.parametrize("isolation", [False, True], ids=["checkout", "worktree"])
async def test_evidence_on_the_unchanged_write_area_holds_after_head_moved(
    tmp_path: Path, isolation: bool
) -> None:
    make_project(tmp_path)
    await stopped_run(tmp_path, isolation)
    commit_outside_the_write_area(tmp_path)
    events = await resumed(tmp_path, isolation)
    assert [r.is_error for r in reports(events)] == [False, False], reports(events)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    assert (tmp_path / "src/calc.py").read_text() == FIXED


async def test_evidence_whose_files_changed_since_is_still_refused(tmp_path: Path) -> None:
    make_project(tmp_path)
    await stopped_run(tmp_path, isolation=False)
    commit_outside_the_write_area(tmp_path)
    (tmp_path / "src/calc.py").write_text(FIXED + "# changed after the tests ran\n")
    events = await resumed(tmp_path, isolation=False)
    refused = reports(events)
    assert refused and all(r.is_error for r in refused), refused
    assert all("ran before the last change to the write area" in r.result for r in refused)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status != "done", result
