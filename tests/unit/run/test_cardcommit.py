"""The card's state commit: exactly the card's change, computed from the card the run read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cardrunner.card.card import load_card
from cardrunner.card.record import CardUpdate, RunRecord
from cardrunner.git.repo import GitRepo
from cardrunner.run.cardcommit import commit_card_state
from tests.support.project import git, make_project, slug_of

ENTRY = RunRecord(id="20261201-090000-fix-add", result="done", rounds=3, commit="abc")


async def test_only_the_cards_new_state_is_committed(tmp_path: Path) -> None:
    card_path = make_project(tmp_path)
    card = load_card(card_path)  # what the run read at its start
    (tmp_path / "src" / "other.py").write_text("X = 1\n")
    git(tmp_path, "add", "src/other.py")  # the user's staged work stays staged, uncommitted
    edited = card_path.read_text().replace("returns -1.", "returns -1 (an unsaved note).")
    card_path.write_text(edited)  # edits made while the run went on stay in the working tree
    update = CardUpdate(state="Done", reason=None, run=ENTRY)
    note = await commit_card_state(GitRepo(tmp_path), "cards/fix-add.md", card, update)
    assert note == ""
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD").split() == ["cards/fix-add.md"]
    committed = git(tmp_path, "show", "HEAD:cards/fix-add.md")
    assert "state: Done" in committed and "20261201-090000-fix-add" in committed
    assert "unsaved note" not in committed
    assert card_path.read_text() == edited
    status = git(tmp_path, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M cards/fix-add.md", "A  src/other.py"]
    message = git(tmp_path, "log", "-1", "--format=%B")
    assert message.startswith("card: Adding two numbers subtracts them → Done\n")
    assert (
        f"Card: {slug_of('cards/fix-add.md')}" in message
        and "Run: 20261201-090000-fix-add" in message
    )
    fmt = "%(trailers:only,unfold,separator=%x1f)"
    trailers = [
        t.split(": ", 1)
        for t in git(tmp_path, "log", "-1", f"--format={fmt}").strip().split("\x1f")
    ]
    assert [tuple(t) for t in trailers] == [
        ("Card", slug_of("cards/fix-add.md")),
        ("Run", "20261201-090000-fix-add"),
        ("Result", "done"),
        ("Rounds", "3"),
        ("Commit", "abc"),
    ]


async def test_undone_runs_move_no_branch(tmp_path: Path) -> None:
    card_path = make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD")
    for reason in ("cancelled", "rejected"):
        update = CardUpdate(state="Failed", reason=reason, run=ENTRY)
        card = load_card(card_path)
        assert await commit_card_state(GitRepo(tmp_path), "cards/fix-add.md", card, update) == ""
    assert git(tmp_path, "rev-parse", "HEAD") == head


async def test_a_failed_run_commits_its_reason(tmp_path: Path) -> None:
    card_path = make_project(tmp_path)
    update = CardUpdate(state="Failed", reason="max_rounds", run=replace(ENTRY, result="failed"))
    card = load_card(card_path)
    assert await commit_card_state(GitRepo(tmp_path), "cards/fix-add.md", card, update) == ""
    assert git(tmp_path, "log", "-1", "--format=%s").endswith("→ Failed (max_rounds)\n")
    assert "reason: max_rounds" in git(tmp_path, "show", "HEAD:cards/fix-add.md")
