"""`cardrunner log CARD.md`: the card's runs from its card commits, plus an uncommitted last run."""

from __future__ import annotations

from pathlib import Path

from cardrunner.card.card import load_card, write_card
from cardrunner.card.record import CardUpdate, RunRecord
from cardrunner.cli.log import card_history
from cardrunner.git.repo import GitRepo
from cardrunner.run.cardcommit import commit_card_state
from tests.support.project import make_project


async def commit_run(root: Path, card_path: Path, record: RunRecord) -> None:
    card = load_card(card_path)
    update = CardUpdate(state="Done" if record.result == "done" else "Failed", run=record)
    write_card(card_path, update)
    assert await commit_card_state(GitRepo(root), "cards/fix-add.md", card, update) == ""


async def test_the_history_lists_committed_runs_and_marks_one_only_in_the_card(
    tmp_path: Path,
) -> None:
    card_path = make_project(tmp_path)
    first = RunRecord(id="r1", result="failed", reason="max_rounds", rounds=60, cost_usd=1.5)
    second = RunRecord(id="r2", result="done", rounds=7, tokens=41_234, commit="0123456789abcdef")
    await commit_run(tmp_path, card_path, first)
    await commit_run(tmp_path, card_path, second)
    lines = await card_history(card_path, tmp_path)
    assert lines == [
        "Adding two numbers subtracts them — 2 runs, newest first",
        "  r2 · done · 7 rounds · 41.2k tokens · commit 0123456789",
        "  r1 · failed (max_rounds) · 60 rounds · $1.50",
    ]
    third = RunRecord(id="r3", result="done", outcome="not_committed")  # --no-commit
    write_card(card_path, CardUpdate(state="Review", run=third))
    lines = await card_history(card_path, tmp_path)
    assert lines[0].endswith("— 3 runs, newest first")
    assert lines[1] == "  r3 · done · not committed (in the card only)"


async def test_outside_a_repository_the_card_s_own_record_is_the_history(tmp_path: Path) -> None:
    card_path = tmp_path / "c.md"
    card_path.write_text(
        "---\ntitle: T\nlast_run: {id: r1, result: done}\n---\nx\n\n## Acceptance criteria\n- a\n"
    )
    assert await card_history(card_path, tmp_path) == [
        "T — 1 run, newest first",
        "  r1 · done · not committed (in the card only)",
    ]
