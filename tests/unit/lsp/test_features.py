"""The LSP features in this process: lenses, card diagnostics, the board, hover, and the review
(the question, the negotiated native review, dropping a hunk, accepting, rejecting).

The real server answers an in-process editor (tests/support/inprocess.py): the same handlers
and features as `cardrunner lsp`, the same JSON, but no subprocess and no run — a review is
asked for the way a run's approver asks, on a real git workspace, so the before-copies, the
`.diff` and the decision are the real ones. The end-to-end tests (tests/e2e/test_lsp_*.py) cover
the same features over stdio with real runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from cardrunner.agent.events import RoundStarted, RunFinished, RunStarted, Usage
from cardrunner.agent.review import HunkRef, Proof, ReviewDecision, ReviewRequest
from cardrunner.git.repo import GitRepo
from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.features.review import ACCEPT, ACTIONS
from cardrunner.record.state import Criterion, RunState
from tests.support.inprocess import InProcessEditor, started
from tests.support.lsp import CARD, Project, is_forecast, make_project

BEFORE = 'def greet(name):\n    return "hi"\n'
AFTER = 'def greet(name):\n    return f"hello {name}"\n'


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def editor(project: Project) -> AsyncIterator[InProcessEditor]:
    async for e in started(InProcessEditor(project.root)):
        yield e


@pytest.fixture
async def native(project: Project) -> AsyncIterator[InProcessEditor]:
    own = {"notifications": True, "nativeReview": True}
    async for e in started(InProcessEditor(project.root, own_options=own)):
        yield e


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def titles(lenses: list[dict[str, Any]]) -> list[str]:
    return [lens["command"]["title"] for lens in lenses]


async def lenses(editor: InProcessEditor, uri: str) -> list[dict[str, Any]]:
    """The lenses but the card's cost forecast (tests/unit/lsp/test_forecast.py has that)."""
    found: list[dict[str, Any]] = await editor.request(
        "textDocument/codeLens", {"textDocument": {"uri": uri}}
    )
    return [lens for lens in found if not is_forecast(lens["command"]["title"])]


# --- cards ----------------------------------------------------------------------------------


async def test_an_idle_card_offers_a_run_and_hovers_its_state(
    editor: InProcessEditor, project: Project
) -> None:
    uri = editor.open(project.write_card("idle", title="Idle card"))
    assert titles(await lenses(editor, uri)) == ["▶ Run card"]
    [lens] = await lenses(editor, uri)
    assert lens["command"]["command"] == names.RUN and lens["command"]["arguments"] == [uri]
    hover = await editor.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}},
    )
    assert hover["contents"]["value"] == "**Idle card** — New"
    criterion = await editor.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 9, "character": 2}},
    )
    assert criterion["contents"]["value"] == "criterion 1: not checked by a run yet"


async def test_a_card_with_a_bad_state_gets_its_problem_on_the_line(
    editor: InProcessEditor, project: Project
) -> None:
    fixed = CARD.format(title="Bad")
    card = project.write_card("bad", fixed.replace("state: New", "state: Sideways"))
    uri = editor.open(card)
    problems = await editor.wait_for("the card's diagnostics", lambda: editor.diagnostics(uri))
    [problem] = [d for d in problems if d["code"] == "card"]
    assert "Sideways" in problem["message"]
    assert problem["range"]["start"]["line"] == 2
    editor.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]},
    )
    await editor.wait_for("the problem to go", lambda: editor.diagnostics(uri) == [])


async def test_the_board_puts_each_card_in_its_column(
    editor: InProcessEditor, project: Project
) -> None:
    project.write_card("first", title="First")
    project.write_card("done", CARD.format(title="Finished").replace("state: New", "state: Done"))
    await editor.app.rescan()
    board = await editor.request(names.BOARD, None)
    columns = {c["state"]: [card["title"] for card in c["cards"]] for c in board["columns"]}
    assert columns["New"] == ["First"] and columns["Done"] == ["Finished"]
    assert board["running"] == 0 and board["waitingReviews"] == 0


# --- the review -----------------------------------------------------------------------------


async def ask_review(editor: InProcessEditor, project: Project) -> tuple[Path, asyncio.Task[Any]]:
    """What a run's approver does at `git_commit`: one changed file, a review asked for."""
    card = project.write_card("review", title="Friendly greeting").resolve()
    editor.open(card)
    repo = GitRepo(project.root)
    base = await repo.snapshot(["src"])
    (project.root / "src" / "app.py").write_text(AFTER)
    raw, files = await repo.diff_trees(base, await repo.snapshot(["src"]), ["src"])
    diff = raw.decode()
    request = ReviewRequest(
        run_id="20261201-120000-review",
        card_title="Friendly greeting",
        card_path=card,
        root=project.root,
        message="card: Friendly greeting\n\nSay hello.",
        files=files,
        diff=diff,
        base_tree=base,
    )
    return card, asyncio.create_task(editor.app.reviews.review(card, request))


async def decided(task: asyncio.Task[Any]) -> ReviewDecision:
    async with asyncio.timeout(10):
        decision: ReviewDecision = await task
    return decision


async def test_the_generic_review_opens_the_diff_asks_and_takes_the_answer(
    editor: InProcessEditor, project: Project
) -> None:
    editor.answers = [ACCEPT]
    card, task = await ask_review(editor, project)
    decision = await decided(task)
    assert decision.decision == "accept" and decision.drop_hunks == []
    [question] = editor.sent("window/showMessageRequest")
    assert [a["title"] for a in question["actions"]] == list(ACTIONS)
    diff_path = project.root / ".cardrunner" / "runs" / "20261201-120000-review.diff"
    assert "src/app.py" in question["message"] and str(diff_path) in question["message"]
    assert [d["uri"] for d in editor.sent("window/showDocument")] == [diff_path.as_uri()]
    [review] = editor.sent(names.REVIEW_REQUESTED)
    assert review["uri"] == card.as_uri() and review["diffPath"] == str(diff_path)
    [entry] = review["files"]
    assert read(entry["before"]) == BEFORE, "the file as it was, from git"
    assert read(entry["after"]) == AFTER


async def test_a_client_with_its_own_review_gets_no_question_and_decides_by_command(
    native: InProcessEditor, project: Project
) -> None:
    card, task = await ask_review(native, project)
    await native.wait_for("the review notification", lambda: native.sent(names.REVIEW_REQUESTED))
    uri = card.as_uri()
    assert titles(await lenses(native, uri)) == ["Review changes", "✓ Accept & commit", "✗ Reject"]
    answer = await native.command(names.REJECT, uri, "name the user")
    assert answer == {"uri": uri, "decided": True}
    decision = await decided(task)
    assert decision.decision == "reject" and decision.reason == "name the user"
    assert native.sent("window/showMessageRequest") == []
    assert native.sent("window/showDocument") == []


async def test_a_hunk_dropped_in_the_diff_is_left_out_of_the_accepted_change(
    native: InProcessEditor, project: Project
) -> None:
    card, task = await ask_review(native, project)
    [review] = await native.wait_for("the review", lambda: native.sent(names.REVIEW_REQUESTED))
    uri, diff_uri = card.as_uri(), Path(review["diffPath"]).as_uri()
    before = titles(await lenses(native, diff_uri))
    dropped = await native.command(names.TOGGLE_HUNK, uri, {"path": "src/app.py", "hunk": 0})
    assert dropped == {"uri": uri, "path": "src/app.py", "hunk": 0, "dropped": True}
    after = titles(await lenses(native, diff_uri))
    assert before != after, "the diff's lenses say the hunk is dropped"
    marks = await native.wait_for("the dropped hunk's mark", lambda: native.diagnostics(diff_uri))
    assert len(marks) == 1
    assert await native.command(names.ACCEPT, uri, {"reason": "later"}) == {
        "uri": uri,
        "decided": True,
    }
    decision = await decided(task)
    assert decision.decision == "accept" and decision.reason == "later"
    assert decision.drop_hunks == [HunkRef("src/app.py", 0)]


async def test_a_command_for_no_waiting_review_is_refused_with_a_message(
    editor: InProcessEditor, project: Project
) -> None:
    uri = editor.open(project.write_card("nothing"))
    answer = await editor.command(names.ACCEPT, uri)
    assert answer == {"error": "no review is waiting for this card"}
    shown = [m["message"] for m in editor.sent("window/showMessage")]
    assert "cardrunner: no review is waiting for this card" in shown


async def test_criteria_not_verified_yet_stay_out_of_problems_while_the_run_goes_on(
    editor: InProcessEditor, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = project.write_card("running", title="Running card")
    uri = editor.open(card)
    path = card.resolve()
    view = RunState(card_path=path, run_id="r-1", title="Running card")
    monkeypatch.setitem(editor.app.runs.manager._views, path, view)  # a run no editor plays
    view.apply(
        RunStarted(
            run_id="r-1", card=str(path), title="Running card", model="replay", tools=[],
            limits={"max_rounds": 10}, criteria=["The greeting says hello.", "It names the user."],
        )
    )  # fmt: skip
    view.apply(RoundStarted(round=3, max_rounds=10))

    def criteria() -> dict[str, dict[str, Any]]:
        return {d["code"]: d for d in editor.diagnostics(uri) if d["code"].startswith("criterion")}

    editor.app.diagnostics.refresh(path)
    shown = await editor.wait_for("the criteria's diagnostics", lambda: len(criteria()) == 2)
    assert shown
    hint, warning = int(types.DiagnosticSeverity.Hint), int(types.DiagnosticSeverity.Warning)
    assert {code: d["severity"] for code, d in criteria().items()} == {
        "criterion-1": hint,
        "criterion-2": hint,
    }, "progress, not problems: nothing in the Problems panel"
    assert criteria()["criterion-2"]["message"] == "pending: criterion 2 not verified yet"
    view.apply(
        RunFinished(
            status="failed", reason="model_failed", rounds=3, tool_calls=0, usage=Usage(),
            cost_usd=0.0,
        )
    )  # fmt: skip
    editor.app.diagnostics.refresh(path)
    await editor.wait_for(
        "the warnings once the run is over",
        lambda: {d["severity"] for d in criteria().values()} == {warning},
    )


def test_run_texts_say_what_the_run_is_doing() -> None:
    """The lens, progress and the card's run diagnostic: the baseline check before round 1, and
    "waiting for your review" (not git_commit running) while a review waits."""
    from cardrunner.lsp.features.codelens import lens_summary
    from cardrunner.lsp.features.progress import doing

    view = RunState(Path("cards/a.md"), "r1", "A", model="claude-opus-4-5", max_rounds=60)
    assert lens_summary(view).startswith("baseline check · round 0/60")
    assert doing(view).startswith("baseline check · ")
    view.round, view.cost_usd, view.tool, view.state = 15, 0.0649, "git_commit", "review"
    assert lens_summary(view) == "round 15/60 · 0 tok · $0.06 · git_commit"
    assert doing(view) == "waiting for your review · round 15/60 · 0 tok · $0.06"


@pytest.mark.parametrize(
    ("model", "estimated"),
    [("replay:a.json", False), ("claude-opus-4-5", True), ("replay:a.json", True)],
    ids=["replayed", "usage not reported", "both"],
)
def test_an_estimated_cost_is_marked_one_way_wherever_it_shows(model: str, estimated: bool) -> None:
    """A replayed run (nobody was billed) and a run whose endpoint did not report its usage
    (cardrunner's own count) are both estimates: the lens, progress, status, board, run view,
    totals (the CLI, `cardrunner log`, the PR body) and card diagnostic say so, short `~$0.06 est.` or long `~$0.0649
    (estimate)`; a billed run's cost is plain."""
    from cardrunner.lsp.features.codelens import lens_summary
    from cardrunner.lsp.features.progress import doing
    from cardrunner.lsp.features.status import status_entry
    from cardrunner.record.account import Timeline

    view = RunState(Path("cards/a.md"), "r1", "A", model=model, max_rounds=60)
    view.round, view.cost_usd, view.tool, view.estimated = 15, 0.0649, "run_tests", estimated
    assert lens_summary(view) == "round 15/60 · 0 tok · ~$0.06 est. · run_tests"
    assert doing(view) == "round 15/60 · 0 tok · ~$0.06 est. · run_tests"
    entry = status_entry(view, "file:///a.md")
    assert entry["costEstimated"] is True and "~$0.06 est." in entry["summary"]
    assert Timeline().answer(view, newest=None)["costEstimated"] is True
    assert view.totals().endswith("· ~$0.0649 (estimate)")
    view.state = "done"
    assert view.summary().count("~$") == 1
    view.model, view.estimated = "claude-opus-4-5", False
    assert lens_summary(view) == "round 15/60 · 0 tok · $0.06 · run_tests"
    assert not status_entry(view, "file:///a.md")["costEstimated"]
    assert not Timeline().answer(view, newest=None)["costEstimated"]
    assert "~" not in view.totals() + view.summary() and "est" not in view.totals()


async def test_the_review_shows_where_each_criterion_was_checked_and_its_screenshots(
    native: InProcessEditor, project: Project
) -> None:
    card, task = await ask_review(native, project)  # a plain review first: no proof, same shape
    [plain] = await native.wait_for("the review", lambda: native.sent(names.REVIEW_REQUESTED))
    assert plain["criteria"] == []
    await native.command(names.REJECT, card.as_uri(), "again")
    await decided(task)
    view = RunState(card_path=card, run_id="r", title="Friendly greeting")
    view.criteria = [Criterion("Says hello."), Criterion("Tests pass. (code)")]
    request = ReviewRequest(
        run_id="20261201-120000-proof", card_title="Friendly greeting", card_path=card,
        root=project.root, message="card: Friendly greeting", files=["src/app.py"], diff="",
        base_tree="", proof={
            0: Proof("in the app", (".cardrunner/runs/r/evidence/toolu_1-1.png",)),
            1: Proof("in the code only (the card marks it (code))"),
        },
    )  # fmt: skip
    approver = native.app.reviews.approver(view)
    asked = asyncio.create_task(approver.review(request))
    review = await native.wait_for(
        "the second review", lambda: native.sent(names.REVIEW_REQUESTED)[1:]
    )
    first, second = review[0]["criteria"]
    assert {"text", "status", "evidence"} <= first.keys()  # the fields clients know stay
    assert first["checked"] == "in the app"
    shot = project.root / ".cardrunner/runs/r/evidence/toolu_1-1.png"
    assert first["screenshots"] == [str(shot)]
    assert second["checked"].startswith("in the code only") and second["screenshots"] == []
    await native.command(names.REJECT, card.as_uri(), "done looking")
    assert (await decided(asked)).decision == "reject"
