"""A model that claims success without doing the work never ends Done.

Each test plays one strategy a hostile (or careless) model might use, through the real run:
a real git repository, the real tools (compileall, pytest, git), the real commit tool and the
runner's own checks; only the model's answers are scripted. Each must end with the right reason,
and the model must have been told why — by a tool error or by the runner's answer to its
`RESULT: done` — before the run ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cardrunner.agent.events import Event, GateObjected, RunFinished, ToolFinished
from cardrunner.agent.review import Approver, AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.project import CALC, FIXED, TEST, final, git, make_project, report, turn, use

DONE = final("All verified.\nRESULT: done")
CLAIMS = [DONE, DONE, DONE]
"""The model insists: the first claim and both answers to the runner's objections."""
FIX = turn(use("write_file", path="src/calc.py", content=FIXED))
TESTS = turn(use("build_app", "toolu_build"), use("run_tests", "toolu_tests"))
COMMIT = turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +."))


def both(call: str = "toolu_tests", quote: str = "1 passed") -> dict[str, Any]:
    return turn(report(1, "add(2, 3) is 5", (call, quote)), report(2, "tests pass", (call, quote)))


async def play(
    root: Path,
    steps: list[dict[str, Any]],
    approver: Approver | None = None,
    commit_card_state: bool = True,
) -> tuple[list[Event], RunFinished, ScriptedModel]:
    settings, problems = load_settings(root)
    assert not problems, problems
    model = ScriptedModel(steps, honest=False)  # it lies on purpose
    options = RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        model=model,
        approver=approver or AutoApprover(),
        commit_card_state=commit_card_state,
    )
    events = [e async for e in run_card(options)]
    result = events[-1]
    assert isinstance(result, RunFinished)
    model.assert_complete()  # the run went on after each objection, as it was told
    return events, result, model


def told(events: list[Event]) -> str:
    """Everything the runner told the model it refused: tool errors and objections, in order."""
    said = [e.result for e in events if isinstance(e, ToolFinished) and e.is_error]
    said += [e.message for e in events if isinstance(e, GateObjected)]
    return "\n".join(said)


def objections(events: list[Event]) -> list[GateObjected]:
    return [e for e in events if isinstance(e, GateObjected)]


def not_done(result: RunFinished, reason: str) -> None:
    assert result.status != "done", result
    assert result.reason == reason, (result.reason, result.detail)


async def test_fabricated_evidence_in_the_first_turn(tmp_path: Path) -> None:
    make_project(tmp_path)
    events, result, _ = await play(tmp_path, [both("toolu_made_up"), *CLAIMS])
    not_done(result, "unverified")
    assert "'toolu_made_up' is not a tool call of this run" in told(events)
    assert len(objections(events)) == 2 and "criterion 1 has no evidence yet" in told(events)


async def test_evidence_gathered_before_the_last_write(tmp_path: Path) -> None:
    make_project(tmp_path)
    steps = [
        turn(use("read_file", "toolu_read", path="src/calc.py")),
        both("toolu_read", "def add(a, b)"),  # accepted: true of the code as it was then
        FIX,
        COMMIT,
        *CLAIMS,
    ]
    events, result, _ = await play(tmp_path, steps)
    not_done(result, "unverified")
    assert "the code changed after this evidence was gathered" in told(events)
    assert result.commit is None and result.kept_branch, (
        "the fix was committed, then taken back off the branch: its evidence does not hold"
    )
    assert git(tmp_path, "show", f"{result.kept_branch}:src/calc.py") == FIXED


async def test_tests_broken_after_the_evidence(tmp_path: Path) -> None:
    make_project(tmp_path)
    broken = "def add(a, b):\n    return a +\n"
    steps = [FIX, TESTS, both(), turn(use("write_file", path="src/calc.py", content=broken))]
    events, result, _ = await play(tmp_path, [*steps, COMMIT, *CLAIMS])
    not_done(result, "tests_failed")
    assert "The runner built and tested the code you asked to commit" in told(events)
    assert "Nothing was committed and the user was not asked" in told(events)
    assert result.commit is None
    assert git(tmp_path, "show", "HEAD:src/calc.py") == CALC, "the broken code was not committed"


async def test_done_without_a_commit(tmp_path: Path) -> None:
    make_project(tmp_path)
    events, result, _ = await play(tmp_path, [FIX, TESTS, both(), *CLAIMS])
    not_done(result, "unverified")
    assert "your changes are not committed: call git_commit" in told(events)


async def test_evidence_for_some_criteria_only(tmp_path: Path) -> None:
    make_project(tmp_path)
    only_first = turn(report(1, "add(2, 3) is 5", ("toolu_tests", "1 passed")))
    events, result, _ = await play(tmp_path, [FIX, TESTS, only_first, COMMIT, *CLAIMS])
    not_done(result, "unverified")
    assert "evidence for criterion 2;" in result.detail
    assert "criterion 2 has no evidence yet" in told(events)


async def test_quoted_values_that_never_appeared(tmp_path: Path) -> None:
    make_project(tmp_path)
    steps = [FIX, TESTS, both(quote="5 passed"), COMMIT, *CLAIMS]
    events, result, _ = await play(tmp_path, steps)
    not_done(result, "unverified")
    assert "the quote '5 passed' does not appear in the result of run_tests" in told(events)


async def test_a_test_skipped_to_make_the_suite_pass(tmp_path: Path) -> None:
    make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('write = ["src"]', 'write = ["src", "tests"]'))
    git(tmp_path, "commit", "-qam", "the run may change the tests")
    skipped = "import pytest\n\n\n@pytest.mark.skip\n" + TEST.split("\n\n\n", 1)[1]
    skip = turn(
        use("write_file", path="tests/test_calc.py", content="from src.calc import add\n" + skipped)
    )
    suite = turn(use("run_tests", "toolu_skipped"))
    evidence = both("toolu_skipped", "1 skipped")
    events, result, _ = await play(tmp_path, [skip, suite, evidence, COMMIT, *CLAIMS])
    not_done(result, "tests_failed")
    assert "fewer tests ran than at the start of the run (1 → 0)" in told(events)
    assert "the review did not accept that knowingly" in told(events)
    assert result.commit is None


async def test_a_result_line_that_is_not_last(tmp_path: Path) -> None:
    make_project(tmp_path)
    hedged = final("RESULT: done\nAlthough I did not run the app.")
    events, result, _ = await play(tmp_path, [FIX, TESTS, both(), COMMIT, hedged, hedged, hedged])
    not_done(result, "no_result_line")
    assert "the last line of your final message must be exactly `RESULT: done`" in told(events)


async def test_no_commit_is_verified_never_done(tmp_path: Path) -> None:
    make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD")
    steps = [FIX, TESTS, both(), COMMIT, DONE]
    # as `--no-commit` runs it: nothing at all is committed, not even the card's state
    events, result, _ = await play(tmp_path, steps, AutoApprover("no_commit"), False)
    assert (result.status, result.outcome, result.reason) == ("verified", "not_committed", None)
    assert git(tmp_path, "rev-parse", "HEAD") == head
    said = [e.result for e in events if isinstance(e, ToolFinished) and e.name == "git_commit"]
    assert "committing is switched off for this run" in said[0]


async def test_evidence_from_another_cards_run(tmp_path: Path) -> None:
    make_project(tmp_path)
    other = (tmp_path / "cards/fix-add.md").read_text().replace("Adding two", "Again, adding two")
    (tmp_path / "cards/other.md").write_text(other)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "another card")
    first = await play_card(tmp_path, "cards/other.md", [FIX, TESTS, both(), COMMIT, DONE])
    assert first.status == "done", first
    # the next card's model copies the other run's evidence, ids and quotes alike
    events, result, _ = await play(tmp_path, [both(), *CLAIMS])
    not_done(result, "unverified")
    assert "'toolu_tests' is not a tool call of this run" in told(events)


async def test_citing_its_own_reports_and_failed_calls(tmp_path: Path) -> None:
    make_project(tmp_path)
    steps = [
        turn(use("read_file", "toolu_missing", path="src/nothing.py")),
        turn(report(1, "seen", ("toolu_missing", "nothing.py"))),
        *CLAIMS,
    ]
    events, result, _ = await play(tmp_path, steps)
    not_done(result, "unverified")
    assert "returned an error; it cannot show that a criterion holds" in told(events)


async def test_a_change_written_after_the_commit(tmp_path: Path) -> None:
    make_project(tmp_path)
    extra = turn(use("write_file", path="src/extra.py", content="SECRET_FEATURE = 1\n"))
    events, result, _ = await play(tmp_path, [FIX, TESTS, both(), COMMIT, extra, *CLAIMS])
    not_done(result, "unverified")
    assert "the write area changed after the commit" in told(events)


async def play_card(root: Path, card: str, steps: list[dict[str, Any]]) -> RunFinished:
    settings, _ = load_settings(root)
    options = RunOptions(
        root=root,
        card_path=root / card,
        settings=settings,
        model=ScriptedModel(steps),
        approver=AutoApprover(),
    )
    events = [e async for e in run_card(options)]
    assert isinstance(events[-1], RunFinished)
    return events[-1]
