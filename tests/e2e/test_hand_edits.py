"""The reviewer edits the proposed files before accepting: the runner notices and checks again.

Real git, real build and tests, the real commit tool; the approver is a user who changes the
work tree while the review is open and then accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cardrunner.agent.events import ChecksRan, Event, RunFinished, ToolFinished
from cardrunner.agent.review import ReviewDecision, ReviewRequest
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.project import FIXED, final, git, make_project, report, turn, use

EDITED = FIXED + "\n\ndef twice(a):\n    return add(a, a)\n"
BROKEN = "def add(a, b:\n    return a + b\n"  # the build fails: never a known failure
FIX = turn(use("write_file", path="src/calc.py", content=FIXED))
TESTS = turn(use("run_tests", "toolu_tests"))
COMMIT = turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +."))


def both(call: str) -> dict[str, object]:
    return turn(
        report(1, "add(2, 3) is 5", (call, "1 passed")), report(2, "ok", (call, "1 passed"))
    )


@dataclass
class EditingReviewer:
    """Changes src/calc.py to `content` while the review is open, then accepts."""

    root: Path
    content: str
    seen: list[ReviewRequest] = field(default_factory=list)

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        self.seen.append(request)
        if len(self.seen) == 1:
            (self.root / "src" / "calc.py").write_text(self.content)
        return ReviewDecision("accept")


async def play(
    root: Path, steps: list[dict[str, object]], reviewer: EditingReviewer
) -> list[Event]:
    settings, problems = load_settings(root)
    assert not problems
    model = ScriptedModel(steps)
    options = RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        model=model,
        approver=reviewer,
    )
    events = [e async for e in run_card(options)]
    model.assert_complete()
    return events


async def test_a_hand_edit_is_checked_committed_as_edited_and_its_evidence_verified_again(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    again = [turn(use("run_tests", "toolu_again")), both("toolu_again")]
    steps = [FIX, TESTS, both("toolu_tests"), COMMIT, *again, final()]
    events = await play(tmp_path, steps, EditingReviewer(tmp_path, EDITED))
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    assert result.commit is not None
    assert git(tmp_path, "show", f"{result.commit}:src/calc.py") == EDITED
    message = git(tmp_path, "log", "--format=%B", "-1", result.commit)
    assert "The reviewer changed src/calc.py before accepting" in message
    assert [e.phase for e in events if isinstance(e, ChecksRan)] == [
        "baseline",
        "commit",
        "hand_edit",
    ]
    committed = next(e for e in events if isinstance(e, ToolFinished) and e.name == "git_commit")
    assert "the reviewer changed src/calc.py" in committed.result
    assert "+def twice(a):" in committed.result, "the model sees what the reviewer changed"
    assert "The evidence for criteria 1, 2 is stale" in committed.result
    assert {e.commit for e in result.ledger} == {result.commit}


async def test_a_hand_edit_that_breaks_the_tests_is_not_committed(tmp_path: Path) -> None:
    make_project(tmp_path)
    steps = [FIX, TESTS, both("toolu_tests"), COMMIT, final(), final(), final()]
    events = await play(tmp_path, steps, EditingReviewer(tmp_path, BROKEN))
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    assert result.reason == "tests_failed", result.detail
    assert result.commit is None
    committed = next(e for e in events if isinstance(e, ToolFinished) and e.name == "git_commit")
    assert "(changed src/calc.py by hand) the runner's checks fail" in committed.result
