"""`CardBranchRun` in process: the paths the e2e board test does not take.

Real repositories and bare remotes, the real run lifecycle, a scripted model. A CI refusal is
the session's refusal (`RunOptions.preflight`): one `RunFinished`, `config_error`, no log, the
card untouched, as an editor or CLI run refused while preparing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.agent.events import Event, Notice, RunFinished, RunStarted
from cardrunner.board.ci import CardBranchRun, PullRequestApprover, PushTarget
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import StatePaths
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.liveness import CardLock
from cardrunner.run.options import RunOptions
from tests.support.project import fix_transcript, git, make_project, slug_of
from tests.support.trust import TRUSTED

BRANCH = f"cards/{slug_of('cards/fix-add.md')}"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """(a clone to run in, its bare origin)."""
    seed = tmp_path / "seed"
    make_project(seed)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(origin), str(work))
    return work, origin


def branch_run(
    root: Path, steps: list[dict[str, Any]] | None, body: Path | None = None
) -> CardBranchRun:
    """The CI run of fix-add; `steps` None: no model and no key (the session chooses)."""
    settings, problems = load_settings(root)
    assert not problems, problems
    options = RunOptions(
        root=root,
        card_path=root / "cards" / "fix-add.md",
        settings=settings,
        model=None if steps is None else ScriptedModel(steps),
        approver=PullRequestApprover(),
        env=TRUSTED,
    )
    return CardBranchRun(options, PushTarget(remote="origin", pr_body=body))


async def play(run: CardBranchRun) -> tuple[list[Event], RunFinished]:
    events = [e async for e in run.events()]
    assert isinstance(events[-1], RunFinished)
    return events, events[-1]


def notices(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def run_logs(root: Path) -> list[Path]:
    runs = StatePaths(root).runs
    return sorted(runs.glob("*.jsonl")) if runs.exists() else []


def assert_refused_unchanged(work: Path, events: list[Event], body: Path | None = None) -> None:
    """Refused as the session refuses: only the one result, and nothing here changed."""
    assert len(events) == 1 and isinstance(events[0], RunFinished)
    assert events[0].reason == "config_error"
    assert run_logs(work) == []
    assert git(work, "branch", "--list", "cards/*") == ""
    assert git(work, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert "state: New" in (work / "cards" / "fix-add.md").read_text()
    assert body is None or not body.exists()


def state_at(root: Path, ref: str) -> str:
    return str(
        yaml.safe_load(git(root, "show", f"{ref}:cards/fix-add.md").split("---")[1])["state"]
    )


async def test_a_push_the_remote_rejects_keeps_the_branch_here_and_says_why(
    project: tuple[Path, Path],
) -> None:
    work, origin = project
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(0o755)
    run = branch_run(work, fix_transcript())
    events, result = await play(run)
    assert result.status == "done"  # the card is Done; only the delivery failed
    assert run.outcome is not None and not run.outcome.pushed
    assert "the card is Done but its branch was not pushed" in run.outcome.why_not_pushed
    assert "pushes are closed" in run.outcome.why_not_pushed
    assert f"the branch {BRANCH} keeps the run's commit here" in notices(events)
    assert git(origin, "branch", "--list", "cards/*") == ""
    assert git(work, "rev-list", "--count", f"main..{BRANCH}").strip() == "1"
    assert state_at(work, BRANCH) == "Done"
    assert git(work, "symbolic-ref", "--short", "HEAD").strip() == "main"


async def test_isolation_is_off_and_a_detached_checkout_is_returned_to(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    work, origin = project
    toml = work / "cardrunner.toml"
    toml.write_text("isolation = true\n" + toml.read_text())
    git(work, "commit", "-qam", "isolated runs")
    git(work, "push", "-q", "origin", "main")
    start = git(work, "rev-parse", "HEAD").strip()
    git(work, "switch", "-q", "--detach", start)  # as CI checks a pull request out
    body = tmp_path / "body.md"
    run = branch_run(work, fix_transcript(), body)
    events, result = await play(run)
    assert result.status == "done", result.detail
    assert run.outcome is not None and run.outcome.pushed
    assert result.commit == run.outcome.commit == git(origin, "rev-parse", BRANCH).strip()
    assert git(origin, "rev-parse", f"{BRANCH}~1").strip() == start
    assert not (work / ".cardrunner" / "worktrees").exists()  # ran on the branch, not beside it
    assert git(work, "rev-parse", "HEAD").strip() == start
    assert git(work, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # detached again
    assert body.read_text() == run.outcome.body
    assert f"pull-request body written to {body}" in notices(events)
    started = events[0]
    assert isinstance(started, RunStarted)
    log = StatePaths(work).log(started.run_id).read_text().splitlines()
    noted = [json.loads(line)["data"]["message"] for line in log if '"notice"' in line]
    assert f"working on the new branch {BRANCH} from {start[:10]}" in noted


async def test_something_staged_is_refused_before_any_model_call(
    project: tuple[Path, Path],
) -> None:
    work, _ = project
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    run = branch_run(work, fix_transcript())
    events, result = await play(run)
    assert result.reason == "config_error" and "something is staged" in result.detail
    model = run.options.model
    assert isinstance(model, ScriptedModel) and model.requests == []
    assert_refused_unchanged(work, events)
    assert state_at(work, "HEAD") == "New"
    assert run.outcome is not None and run.outcome.why_not_pushed == result.detail


async def test_without_a_key_the_run_is_refused_before_its_branch_is_made(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    work, _ = project
    body = tmp_path / "body.md"
    run = branch_run(work, None, body)
    events, result = await play(run)
    assert "ANTHROPIC_API_KEY" in result.detail
    assert_refused_unchanged(work, events, body)  # no branch made and undone, no body


async def test_a_card_another_run_holds_is_refused_before_its_branch_is_made(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    work, _ = project
    body = tmp_path / "body.md"
    held = CardLock.acquire(work, Path("cards/fix-add.md"), "20261201-other-run")
    try:
        run = branch_run(work, fix_transcript(), body)
        events, result = await play(run)
    finally:
        held.release()
    assert "is already running: run 20261201-other-run" in result.detail
    assert_refused_unchanged(work, events, body)
    model = run.options.model
    assert isinstance(model, ScriptedModel) and model.requests == []


async def test_a_refusal_on_the_branch_goes_back_and_deletes_it(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    work, origin = project
    (work / "src" / "calc.py").write_text("# my own work in progress\n")  # not staged
    body = tmp_path / "body.md"
    run = branch_run(work, fix_transcript(), body)
    events, result = await play(run)
    assert result.reason == "config_error" and "src/calc.py" in result.detail
    assert [type(e) for e in events].count(RunFinished) == 1
    assert run.outcome is not None and run.outcome.branch == BRANCH
    assert not run.outcome.pushed
    assert any(n.startswith("nothing was pushed: ") for n in notices(events))
    assert git(work, "branch", "--list", "cards/*") == ""  # the empty branch is gone
    assert git(origin, "branch", "--list", "cards/*") == ""
    assert git(work, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert (work / "src" / "calc.py").read_text() == "# my own work in progress\n"
    assert "state: New" in (work / "cards" / "fix-add.md").read_text()
    assert run_logs(work) == []
