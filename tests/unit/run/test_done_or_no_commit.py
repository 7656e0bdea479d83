"""A run that does not end Done leaves no commit on the user's branch, with `--yes` too.

A real project in a real git repository, the real tools and checks, a scripted model and the
`--yes` approver: the review is accepted and the commit made while the run goes on, then the
verdict finds the run Failed. The branch's HEAD and the write area must then be as the run found
them, and the commit kept on a side branch the run's end names.
"""

from __future__ import annotations

from pathlib import Path

from cardrunner.agent.events import Event, Notice, RunFinished, ToolFinished
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.session import RunSession
from tests.support.project import FIXED, final, git, make_project, report, turn, use
from tests.unit.run.test_session import options

WRONG = "def add(a, b):\n    return abs(a) + abs(b)\n"
"""Passes the repository's one test (2 + 3), wrong for negative numbers."""


async def _run(root: Path, steps: list[dict[str, object]]) -> list[Event]:
    return [e async for e in RunSession(options(root, model=ScriptedModel(steps))).events()]


def _wrong_fix_then(*ending: dict[str, object]) -> list[dict[str, object]]:
    return [
        turn(use("read_file", "toolu_read", path="src/calc.py")),
        turn(use("write_file", path="src/calc.py", content=WRONG)),
        turn(use("run_tests", "toolu_tests")),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nabs.")),
        *ending,
    ]


async def test_a_committed_wrong_fix_that_ends_failed_leaves_head_where_it_was(
    tmp_path: Path,
) -> None:
    card = make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    steps = _wrong_fix_then(
        turn(report(1, "the source adds", ("toolu_read", "def add(a, b):"))),
        final(),  # evidence from before the change: refused, objected to, twice
        final(),
        final(),
    )
    events = await _run(tmp_path, steps)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed", result
    assert result.commit is None and result.kept_branch is not None
    kept = git(tmp_path, "rev-parse", result.kept_branch).strip()
    assert git(tmp_path, "show", f"{kept}:src/calc.py") == WRONG  # the change is not lost
    # the user's branch: back where it was, apart from the card's own state commit
    log = git(tmp_path, "log", "--format=%H %s", f"{head}..HEAD").splitlines()
    assert all(kept not in line for line in log)
    assert git(tmp_path, "rev-list", "--count", f"{head}..HEAD").strip() in ("0", "1")
    assert git(tmp_path, "show", "HEAD:src/calc.py") != WRONG
    assert (tmp_path / "src" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert git(tmp_path, "status", "--porcelain", "--", "src") == ""
    said = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert any(result.kept_branch in m and "taken off your branch" in m for m in said), said
    assert "state: Failed" in card.read_text()


async def test_a_model_that_gives_up_after_its_commit_leaves_no_commit(tmp_path: Path) -> None:
    make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    events = await _run(tmp_path, _wrong_fix_then(final("RESULT: failed: cannot verify")))
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    assert result.commit is None and result.kept_branch == f"cardrunner/{result_run_id(events)}"
    assert "src/calc.py" not in git(tmp_path, "diff", "--name-only", head, "HEAD")
    assert git(tmp_path, "status", "--porcelain", "--", "src") == ""


async def test_a_done_run_keeps_its_commit(tmp_path: Path) -> None:
    make_project(tmp_path)
    steps = [
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, "add(2, 3) is 5 in the test", ("toolu_tests", "1 passed")),
            report(2, "1 passed", ("toolu_tests", "Tests succeeded.")),
        ),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +.")),
        final(),
    ]
    result = (await _run(tmp_path, steps))[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    assert result.kept_branch is None
    assert git(tmp_path, "show", "HEAD~1:src/calc.py") == FIXED


def result_run_id(events: list[Event]) -> str:
    from cardrunner.agent.events import RunStarted

    started = events[0]
    assert isinstance(started, RunStarted)
    return started.run_id


async def test_the_model_cannot_edit_its_card_even_when_the_write_area_holds_it(
    tmp_path: Path,
) -> None:
    card = make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('write = ["src"]', 'write = ["."]'))
    git(tmp_path, "commit", "-qam", "the whole tree is the write area")
    fewer = card.read_text().replace("- The tests pass.\n", "")
    steps = [
        turn(use("read_file", path="cards/fix-add.md")),
        turn(use("write_file", path="cards/fix-add.md", content=fewer)),
        turn(use("write_file", path="cards/new.md", content="---\ntitle: x\n---\n")),
        final("RESULT: failed: the card would not let me"),
    ]
    events = await _run(tmp_path, steps)
    writes = [e for e in events if isinstance(e, ToolFinished) and e.name == "write_file"]
    assert [w.is_error for w in writes] == [True, True]
    assert all("is a card file" in w.result for w in writes)
    assert "- The tests pass." in card.read_text()
    assert not (tmp_path / "cards" / "new.md").exists()


TAMPER = """import pathlib, subprocess, sys
card = pathlib.Path("cards/fix-add.md")
card.write_text(card.read_text().replace("- The tests pass.\\n", ""))
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]))
"""


async def test_a_card_a_build_rewrote_is_put_back_and_the_run_is_not_done(tmp_path: Path) -> None:
    card = make_project(tmp_path, extra_toml='\n[sandbox]\nmode = "off"\n')
    (tmp_path / "tamper.py").write_text(TAMPER)
    toml = tmp_path / "cardrunner.toml"
    old_test = 'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]'
    toml.write_text(toml.read_text().replace(old_test, 'test = ["python", "tamper.py"]'))
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "a test command that rewrites the card (no sandbox)")
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    steps = [
        turn(use("read_file", path="src/calc.py")),
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, "add(2, 3) is 5 in the test", ("toolu_tests", "1 passed")),
            report(2, "1 passed", ("toolu_tests", "1 passed")),
        ),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +.")),
        final(), final(), final(),
    ]  # fmt: skip
    events = await _run(tmp_path, steps)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed", result
    assert "cards/fix-add.md was changed during the run" in result.detail
    assert (
        "- The tests pass." in card.read_text()
    )  # put back, below the front matter cardrunner wrote
    assert "state: Failed" in card.read_text()
    assert git(tmp_path, "rev-list", f"{head}..HEAD", "--", "src") == ""


async def test_a_resumed_run_whose_commit_was_taken_back_reviews_and_commits_again(
    tmp_path: Path,
) -> None:
    from cardrunner.run.options import ResumeGrant

    make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    toml.write_text(toml.read_text().replace("max_rounds = 30", "max_rounds = 5"))
    git(tmp_path, "commit", "-qam", "five rounds")
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    commit = turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +."))
    steps = [
        turn(use("read_file", path="src/calc.py")),
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, "add(2, 3) is 5 in the test", ("toolu_tests", "1 passed")),
            report(2, "1 passed", ("toolu_tests", "1 passed")),
        ),
        commit,  # round 5: committed, then the round budget ends the run
        turn(use("list_files", path="src")),
        commit,
        final(),
    ]
    stopped = (await _run(tmp_path, steps))[-1]
    assert isinstance(stopped, RunFinished) and stopped.reason == "max_rounds", stopped
    assert stopped.kept_branch and stopped.work_tree
    assert "src/calc.py" not in git(tmp_path, "diff", "--name-only", head, "HEAD")
    opts = options(tmp_path, model=ScriptedModel(steps), resume=ResumeGrant(rounds=5))
    events = [e async for e in RunSession(opts).events()]
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    commits = [e for e in events if isinstance(e, ToolFinished) and e.name == "git_commit"]
    assert len(commits) == 1 and not commits[0].is_error  # reviewed and committed again
    assert git(tmp_path, "show", f"{result.commit}:src/calc.py") == FIXED
    assert git(tmp_path, "merge-base", "--is-ancestor", result.commit, "HEAD") == ""
