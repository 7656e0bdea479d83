"""Never lose work: restore on cancel and reject, isolated worktrees, a full disk, secrets, a
crashing loop, and a user editing a file the run is writing."""

from __future__ import annotations

import asyncio
import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.agent.events import (
    Event,
    Notice,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from cardrunner.agent.review import (
    Approver,
    AutoApprover,
    ReviewDecision,
    ReviewRequest,
    ScriptedApprover,
)
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.processes.groups import ProcessGroups
from cardrunner.record.log import RunLog, log_record, read_log
from cardrunner.run.options import ResumeGrant, RunOptions
from cardrunner.run.session import run_card
from tests.support.project import (
    CALC,
    FIXED,
    TEST,
    final,
    fix_transcript,
    git,
    make_project,
    report,
    slow_argv,
    turn,
    use,
)

GROUPS = ProcessGroups()
"""The process groups of every run in this module (each run notes its groups here)."""
HANG = f"test = {json.dumps(slow_argv('workarea-hang', 60))}\n"
"""Tests that hang when the model runs them (the runner's own quick checks pass at once)."""


def commit_hanging_tests(root: Path) -> None:
    """Make the project's test command the one that hangs (`HANG`), and commit it."""
    toml = root / "cardrunner.toml"
    tests = 'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n'
    text = toml.read_text()
    assert tests in text, "the project's test command changed: HANG would replace nothing"
    toml.write_text(text.replace(tests, HANG))
    git(root, "commit", "-qam", "slow tests")


def meta(card: Path) -> dict[str, Any]:
    return yaml.safe_load(card.read_text().split("---")[1])


def options(
    root: Path, steps: list[Any], approver: Approver | None = None, **overrides: Any
) -> RunOptions:
    settings, problems = load_settings(root, overrides or None)
    assert not problems, problems
    return RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        model=ScriptedModel(steps),
        approver=approver or AutoApprover(),
        processes=GROUPS,
    )


async def collect(opts: RunOptions) -> list[Event]:
    events = [e async for e in run_card(opts)]
    assert isinstance(events[-1], RunFinished)
    return events


async def cancel_at(opts: RunOptions, tool: str) -> list[Event]:
    """Run until `tool` starts, then cancel the consumer's task, as an editor's Cancel does."""
    seen: list[Event] = []
    started = asyncio.Event()

    async def consume() -> None:
        async for event in run_card(opts):
            seen.append(event)
            if isinstance(event, ToolStarted) and event.name == tool:
                started.set()

    task = asyncio.create_task(consume())
    async with asyncio.timeout(30):
        await started.wait()
    task.cancel()
    async with asyncio.timeout(30):
        await task
    return seen


WRITE_TWO = [
    turn(use("write_file", path="src/calc.py", content=FIXED)),
    turn(use("write_file", path="src/new.py", content="NEW = 1\n")),
]


async def test_cancel_restores_the_write_area_byte_for_byte_and_resume_brings_the_work_back(
    tmp_path: Path,
) -> None:
    card = make_project(tmp_path, extra_toml="")
    commit_hanging_tests(tmp_path)
    (tmp_path / "src" / "data.bin").write_bytes(b"\x00binary\xff")
    git(tmp_path, "add", "src/data.bin")
    git(tmp_path, "commit", "-qm", "a binary file")
    steps = [
        *WRITE_TWO,
        turn(use("run_tests")),
        turn(  # after the resume: evidence from calls made on the code as it is now
            use("run_tests", "toolu_again"),
            report(1, "e", ("toolu_again", "1 passed")),
            report(2, "e", ("toolu_again", "1 passed")),
        ),
        turn(use("git_commit", message="card: fix")),
        final(),
    ]
    head = git(tmp_path, "rev-parse", "HEAD")
    before = {
        p: p.read_bytes()
        for p in (tmp_path / "src").rglob("*")
        if p.is_file() and "__pycache__" not in str(p)
    }
    events = await cancel_at(options(tmp_path, steps), "run_tests")
    result = events[-1]
    assert isinstance(result, RunFinished) and result.reason == "cancelled" and result.work_tree
    after = {
        p: p.read_bytes()
        for p in (tmp_path / "src").rglob("*")
        if p.is_file() and "__pycache__" not in str(p)
    }
    assert after == before, "the write area is back to its state at run start"
    assert git(tmp_path, "rev-parse", "HEAD") == head, "the user's branch did not move"
    assert (meta(card)["state"], meta(card)["reason"]) == ("Failed", "cancelled")
    assert not GROUPS.live()
    # resume: the run's own changes come back, the conversation goes on
    from cardrunner.run.options import ResumeGrant

    opts = options(tmp_path, steps)
    opts.resume = ResumeGrant()
    opts.settings.commands.test = [sys.executable, "-c", "print('1 passed')"]
    events = await collect(opts)
    assert events[-1].status == "done", events[-1]
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD~1").split() == [
        "src/calc.py",
        "src/new.py",
    ]
    # the cancelled run's card state, left uncommitted, lands with the resumed run's
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD").split() == ["cards/fix-add.md"]
    assert not git(tmp_path, "status", "--porcelain").strip()


async def test_a_rejected_run_restores_the_write_area(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    steps = [
        *WRITE_TWO,
        turn(use("git_commit", message="card: fix")),
        final("I give up.\nRESULT: failed: rejected"),
    ]
    approver = ScriptedApprover([ReviewDecision("reject", "wrong approach")])
    events = await collect(options(tmp_path, steps, approver))
    assert events[-1].reason == "rejected"
    assert (tmp_path / "src/calc.py").read_text() == CALC and not (tmp_path / "src/new.py").exists()
    assert meta(card)["reason"] == "rejected"
    assert any(isinstance(e, Notice) and "restored" in e.message for e in events)


class Inspecting:
    """An approver that looks at both checkouts while the run waits, then decides."""

    def __init__(self, root: Path, before_accept: Any = None) -> None:
        self.root, self.before_accept = root, before_accept
        self.seen: dict[str, Any] = {}

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        [worktree] = [
            w for w in (self.root / ".cardrunner/worktrees").iterdir() if "parked-" not in w.name
        ]  # the run's own
        self.seen["user"] = (self.root / "src/calc.py").read_text()
        self.seen["worktree"] = (worktree / "src/calc.py").read_text()
        self.seen["branch"] = git(self.root, "branch", "--show-current").strip()
        if self.before_accept:
            self.before_accept()
        return ReviewDecision("accept")


async def test_isolation_leaves_the_user_tree_alone_and_brings_a_clean_commit_back(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    approver = Inspecting(tmp_path)
    events = await collect(options(tmp_path, fix_transcript(), approver, isolation=True))
    result = events[-1]
    assert result.status == "done"
    assert approver.seen == {"user": CALC, "worktree": FIXED, "branch": "main"}
    assert (tmp_path / "src/calc.py").read_text() == FIXED
    assert (
        git(tmp_path, "rev-parse", "HEAD~2").strip() == head
        and result.commit == git(tmp_path, "rev-parse", "HEAD~1").strip()
    )
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD").split() == ["cards/fix-add.md"]
    assert not git(tmp_path, "status", "--porcelain").strip()
    # the branch's commit is on the user's branch now, so the branch itself is gone
    assert git(tmp_path, "branch", "--format=%(refname:short)").split() == ["main"]
    assert only_parked(tmp_path)


async def test_isolation_never_forces_a_commit_that_does_not_apply(tmp_path: Path) -> None:
    make_project(tmp_path)

    def user_commits_meanwhile() -> None:
        (tmp_path / "src/calc.py").write_text("def add(a, b):\n    return sum([a, b])\n")
        git(tmp_path, "commit", "-qam", "my own fix")

    events = await collect(
        options(
            tmp_path, fix_transcript(), Inspecting(tmp_path, user_commits_meanwhile), isolation=True
        )
    )
    notes = [e.message for e in events if isinstance(e, Notice)]
    branch = events[-1].unmerged_branch
    run_id = next(e.run_id for e in events if isinstance(e, RunStarted))
    assert branch == f"cardrunner/{run_id}", events[-1]
    assert any(f"stays on {branch}" in n for n in notes), notes
    assert (tmp_path / "src/calc.py").read_text() == "def add(a, b):\n    return sum([a, b])\n"
    assert git(tmp_path, "log", "-1", "--format=%s", "HEAD~1").strip() == "my own fix"
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD").split() == ["cards/fix-add.md"]
    assert git(tmp_path, "show", f"{branch}:src/calc.py") == FIXED
    assert not git(tmp_path, "status", "--porcelain", "--", "src").strip()


async def test_isolated_cancel_removes_the_worktree(tmp_path: Path) -> None:
    make_project(tmp_path)
    commit_hanging_tests(tmp_path)
    steps = [*WRITE_TWO, turn(use("run_tests")), final()]
    events = await cancel_at(options(tmp_path, steps, isolation=True), "run_tests")
    assert events[-1].reason == "cancelled"
    assert only_parked(tmp_path)
    assert git(tmp_path, "branch", "--format=%(refname:short)").split() == ["main"]
    assert (tmp_path / "src/calc.py").read_text() == CALC
    assert not GROUPS.live()


async def test_two_isolated_cards_at_once_do_not_trample_each_other(tmp_path: Path) -> None:
    make_project(tmp_path)
    other = (
        (tmp_path / "cards/fix-add.md")
        .read_text()
        .replace("Adding two numbers subtracts them", "A second card")
    )
    (tmp_path / "cards/second.md").write_text(other)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "second card")
    second = [
        turn(use("write_file", path="src/extra.py", content="X = 2\n")),
        turn(
            use("read_file", "toolu_read_extra", path="src/extra.py"),
            report(1, "e", ("toolu_read_extra", "X = 2")),
            report(2, "e", ("toolu_read_extra", "X = 2")),
        ),
        turn(use("git_commit", message="card: second")),
        final(),
    ]
    one = options(tmp_path, fix_transcript(), isolation=True)
    two = options(tmp_path, second, isolation=True)
    two.card_path = tmp_path / "cards/second.md"
    # card two leaves add() alone, so the project's failing test would (rightly) block its commit
    two.settings.commands.test = [sys.executable, "-c", "print('1 passed in 0.01s')"]
    first, last = await asyncio.gather(collect(one), collect(two))
    assert first[-1].status == last[-1].status == "done", (first[-1].detail, last[-1].detail)
    assert (tmp_path / "src/calc.py").read_text() == FIXED and (
        tmp_path / "src/extra.py"
    ).read_text() == "X = 2\n"
    subjects = git(tmp_path, "log", "--format=%s").splitlines()
    assert len(subjects) == 6  # two runs' commits, each followed by its card's state
    assert sum(1 for s in subjects if s.endswith("→ Done")) == 2


LEFTOVER = [
    turn(use("write_file", path="src/leftover.py", content="LEFT = 1\n")),
    turn(use("read_file", "toolu_leftover", path="src/leftover.py")),
    final("RESULT: failed: enough"),
]


def only_parked(root: Path) -> bool:
    """No run's worktree is left, but the one put aside for the card's next run."""
    left = [w.name for w in (root / ".cardrunner/worktrees").iterdir()]
    return all(name.startswith("parked-") for name in left) and len(left) <= 1


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


async def test_a_failed_isolated_run_leaves_no_worktree_and_a_new_run_sees_none_of_it(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    failed = await collect(options(tmp_path, LEFTOVER, isolation=True, limits={"max_rounds": 1}))
    assert failed[-1].reason == "max_rounds" and failed[-1].work_tree
    notes = [e.message for e in failed if isinstance(e, Notice)]
    assert any(f"kept as the tree {failed[-1].work_tree[:10]}" in n for n in notes), notes
    made = "a new worktree for the run: git's checkout took"
    [note] = [n for n in notes if n.startswith(made)]
    assert note.endswith("(the card's next runs take it back)"), note
    assert only_parked(tmp_path)
    assert branches(tmp_path) == ["main"]  # its branch held no commit: gone, worktree pruned
    assert git(tmp_path, "worktree", "list", "--porcelain").count("worktree ") == 2  # + parked

    [parked] = (tmp_path / ".cardrunner/worktrees").iterdir()
    (parked / "__pycache__").mkdir()  # what the run's code could leave: ignored, untracked
    (parked / "__pycache__" / "evil.pyc").write_bytes(b"x")
    (parked / "tests" / "test_calc.py").write_text("def test_nothing():\n    pass\n")
    kept = (parked / "cardrunner.toml").stat().st_ino
    fresh = [turn(use("read_file", "toolu_look", path="src/leftover.py")), LEFTOVER[2]]
    second = await collect(options(tmp_path, fresh, isolation=True))
    [look] = [e for e in second if isinstance(e, ToolFinished) and e.name == "read_file"]
    assert look.is_error and "LEFT" not in look.result  # another run's file is not here
    assert branches(tmp_path) == ["main"]
    assert (parked / "cardrunner.toml").stat().st_ino == kept, "the worktree was reused"
    assert not (parked / "__pycache__").exists() and not (parked / "src/leftover.py").exists()
    assert (parked / "tests" / "test_calc.py").read_text() == TEST, "tracked files reset"
    assert not [e for e in second if isinstance(e, Notice) and e.message.startswith(made)]


async def test_a_resumed_isolated_run_gets_its_own_files_back(tmp_path: Path) -> None:
    make_project(tmp_path)
    await collect(options(tmp_path, LEFTOVER, isolation=True, limits={"max_rounds": 1}))
    resumed = options(tmp_path, LEFTOVER, isolation=True)
    resumed.resume = ResumeGrant(rounds=5)
    events = await collect(resumed)
    [look] = [e for e in events if isinstance(e, ToolFinished) and e.name == "read_file"]
    assert not look.is_error and "LEFT = 1" in look.result
    assert not (tmp_path / "src/leftover.py").exists()  # the user's tree never had it
    assert branches(tmp_path) == ["main"]


async def test_a_kept_branch_is_a_plain_branch_git_can_delete(tmp_path: Path) -> None:
    make_project(tmp_path)

    def user_commits_meanwhile() -> None:
        (tmp_path / "src/calc.py").write_text("def add(a, b):\n    return sum([a, b])\n")
        git(tmp_path, "commit", "-qam", "my own fix")

    approver = Inspecting(tmp_path, user_commits_meanwhile)
    events = await collect(options(tmp_path, fix_transcript(), approver, isolation=True))
    branch = events[-1].unmerged_branch
    assert branch and branch in branches(tmp_path)
    assert only_parked(tmp_path)
    git(tmp_path, "branch", "-D", branch)  # no worktree holds it
    assert branches(tmp_path) == ["main"]


async def test_a_full_disk_stops_the_run_with_a_clear_reason_and_keeps_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = make_project(tmp_path)
    original, written = RunLog.write, [False]

    def failing(self: RunLog, event: Event) -> None:
        if written[0] and log_record(event) is not None:  # the first line after write_file's
            raise OSError(errno.ENOSPC, "No space left on device")
        original(self, event)
        written[0] = written[0] or (isinstance(event, ToolFinished) and event.name == "write_file")

    monkeypatch.setattr(RunLog, "write", failing)
    events = await collect(options(tmp_path, fix_transcript()))
    result = events[-1]
    assert result.reason == "interrupted" and "No space left on device" in result.detail
    assert (tmp_path / "src/calc.py").read_text() == FIXED, (
        "what the run wrote is kept for a resume"
    )
    assert (meta(card)["state"], meta(card)["reason"]) == ("Failed", "interrupted")
    log = next((tmp_path / ".cardrunner/runs").glob("*.jsonl"))
    assert next(r["type"] for r in read_log(log)) == "start"


async def test_the_api_key_never_reaches_logs_diffs_or_commit_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-api03-THISISASECRETKEY1234567890"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    make_project(tmp_path)
    steps = [
        turn(use("write_file", path="src/calc.py", content=FIXED + f"KEY = '{secret}'\n")),
        turn(
            use("read_file", "toolu_read_calc", path="src/calc.py"),
            report(1, f"checked with {secret}", ("toolu_read_calc", "return a + b")),
            report(2, "ok", ("toolu_read_calc", "return a + b")),
        ),
        turn(use("git_commit", message=f"card: fix\n\nused {secret}")),
        # a change that would commit the key is refused before the review; the model fixes it
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(  # the code changed, so the evidence is gathered again
            use("read_file", "toolu_read_again", path="src/calc.py"),
            report(1, f"checked with {secret}", ("toolu_read_again", "return a + b")),
            report(2, "ok", ("toolu_read_again", "return a + b")),
        ),
        turn(use("git_commit", message=f"card: fix\n\nused {secret}")),
        final(f"done with {secret}\nRESULT: done"),
    ]
    approver = AutoApprover()
    events = await collect(options(tmp_path, steps, approver))
    assert events[-1].status == "done"
    refused = next(e for e in events if isinstance(e, ToolFinished) and e.name == "git_commit")
    assert refused.is_error and "src/calc.py:3: the value of a secret environment" in refused.result
    assert len(approver.requests) == 1  # the change holding the key never reached the review
    assert secret not in approver.requests[0].diff and secret not in approver.requests[0].message
    assert secret not in git(tmp_path, "log", "-1", "--format=%B")
    log = next((tmp_path / ".cardrunner/runs").glob("*.jsonl")).read_text()
    assert secret not in log and "[redacted]" in log


async def test_a_crashing_loop_still_stops_the_app_and_ends_resumable(tmp_path: Path) -> None:
    card = make_project(tmp_path, extra_toml="")
    toml = (
        (tmp_path / "cardrunner.toml")
        .read_text()
        .replace(
            "timeout_seconds",
            'app = ["python", "-c", "import time; time.sleep(60)"]\ntimeout_seconds',
        )
    )
    (tmp_path / "cardrunner.toml").write_text(toml)
    git(tmp_path, "commit", "-qam", "an app")

    def crash(body: dict[str, Any], index: int) -> dict[str, Any]:
        raise RuntimeError("the model adapter broke")

    events = await collect(options(tmp_path, [turn(use("start_app")), crash]))
    assert events[-1].reason == "interrupted" and "the model adapter broke" in events[-1].detail
    assert not GROUPS.live(), "the app was stopped"
    assert meta(card)["reason"] == "interrupted"


async def test_a_user_edit_during_the_run_is_kept_and_reported(tmp_path: Path) -> None:
    make_project(tmp_path)

    def user_edits(body: dict[str, Any], index: int) -> dict[str, Any]:
        (tmp_path / "src/calc.py").write_text("# the user's careful edit\n" + FIXED)
        return turn(use("write_file", path="src/calc.py", content=FIXED + "# model again\n"))

    steps = [
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        user_edits,
        final("RESULT: failed: the user is editing the same file"),
    ]
    events = await collect(options(tmp_path, steps))
    conflict = [
        e
        for e in events
        if getattr(e, "name", "") == "write_file" and getattr(e, "is_error", False)
    ]
    assert conflict and "changed outside this run" in conflict[0].result
    assert (tmp_path / "src/calc.py").read_text().startswith("# the user's careful edit")


def test_nothing_outlives_the_tests() -> None:
    subprocess.run(["true"], check=True)
    assert not GROUPS.live()
