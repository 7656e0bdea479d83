"""A prompt that describes a new card, with a card open: drafted, and saved only on `/save`."""

from __future__ import annotations

from pathlib import Path

from acp import resource_link_block, text_block

from cardrunner.acp.cards import described, draft_card, read_prompt, save
from cardrunner.card.card import load_card


def board(root: Path) -> Path:
    (root / "cards").mkdir()
    card = root / "cards" / "fix-add.md"
    card.write_text("---\ntitle: x\n---\n")
    return card


def test_several_lines_with_a_card_mentioned_or_open_are_a_draft(tmp_path: Path) -> None:
    card = board(tmp_path)
    lines = "Subtract too\n- sub(3, 1) returns 2"
    link = resource_link_block("fix-add.md", card.as_uri())
    mentioned = read_prompt(tmp_path, "cards", [link, text_block(lines)])
    assert (mentioned.what, mentioned.card) == ("draft", card)
    assert read_prompt(tmp_path, "cards", [text_block(lines)], open_card=card).what == "draft"
    # no card open: the cards list; one line around a mention: still a run
    assert read_prompt(tmp_path, "cards", [text_block(lines)]).what == "other"
    around = [text_block("run"), link, text_block("now")]
    assert read_prompt(tmp_path, "cards", around, open_card=card).what == "run"
    assert read_prompt(tmp_path, "cards", [text_block("/run fix-add\nnow")]).what == "run"
    assert read_prompt(tmp_path, "cards", [text_block("/save")]).what == "save"
    typed = [text_block(f"@cards/fix-add.md {lines}")]
    assert read_prompt(tmp_path, "cards", typed).what == "draft"
    assert described(tmp_path, "cards", typed) == ["Subtract too", "- sub(3, 1) returns 2"]
    assert described(tmp_path, "cards", [text_block("fix-add stays\nx")])[0] == "fix-add stays"


def test_the_draft_reads_back_as_a_card_with_its_title_and_criteria(tmp_path: Path) -> None:
    drafted = draft_card(
        ["# Subtract: too ", "", "- sub(3, 1) returns 2", "* [ ] the tests pass", '2. "quoted"']
    )
    assert drafted is not None and drafted.name == "subtract-too.md"
    board(tmp_path)
    path = save(tmp_path, "cards", drafted)
    card = load_card(path)
    assert card.title == "Subtract: too" and card.state == "New"
    assert card.criteria == ["sub(3, 1) returns 2", "the tests pass", '"quoted"']
    assert draft_card(["only a title"]) is None and draft_card(["a", "-"]) is None


def test_saving_never_overwrites_a_card(tmp_path: Path) -> None:
    card = board(tmp_path)
    drafted = draft_card(["Fix add", "it adds"])
    assert drafted is not None and drafted.name == "fix-add.md"
    first = save(tmp_path, "cards", drafted)
    second = save(tmp_path, "cards", drafted)
    assert (first.name, second.name) == ("fix-add-2.md", "fix-add-3.md")
    assert card.read_text() == "---\ntitle: x\n---\n"
    assert draft_card(["../../../etc/passwd", "x"]).name == "etc-passwd.md"  # type: ignore[union-attr]
