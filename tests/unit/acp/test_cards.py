"""What a prompt asks for: a command, a linked or mentioned card file, a named card, or nothing."""

from __future__ import annotations

from pathlib import Path

from acp import embedded_text_resource, resource_block, resource_link_block, text_block

from cardrunner.acp.cards import read_prompt, remember, remembered


def board(root: Path) -> Path:
    (root / "cards" / "sub").mkdir(parents=True)
    for name in ("fix-add.md", "sub/other.md", "notes.txt"):
        (root / "cards" / name).write_text("---\ntitle: x\n---\n")
    return root / "cards" / "fix-add.md"


def test_commands_name_their_card(tmp_path: Path) -> None:
    card = board(tmp_path)
    assert read_prompt(tmp_path, "cards", [text_block("/run cards/fix-add.md")]).card == card
    resume = read_prompt(tmp_path, "cards", [text_block("/resume fix-add")])
    assert (resume.what, resume.card) == ("resume", card)
    assert read_prompt(tmp_path, "cards", [text_block("/cards")]).what == "cards"
    assert read_prompt(tmp_path, "cards", [text_block("/run nowhere.md")]).what == "other"


def test_a_linked_or_embedded_card_file_runs_it(tmp_path: Path) -> None:
    card = board(tmp_path)
    link = resource_link_block("fix-add.md", card.as_uri())
    asked = read_prompt(tmp_path, "cards", [text_block("please"), link])
    assert (asked.what, asked.card) == ("run", card)
    embedded = resource_block(embedded_text_resource(card.as_uri(), "---"))
    assert read_prompt(tmp_path, "cards", [embedded]).card == card
    outside = resource_link_block("x.md", (tmp_path / "README.md").as_uri())
    assert read_prompt(tmp_path, "cards", [outside]).what == "other"


def test_a_card_named_in_the_text_runs_and_anything_else_does_not(tmp_path: Path) -> None:
    board(tmp_path)
    other = tmp_path / "cards" / "sub" / "other.md"
    assert read_prompt(tmp_path, "cards", [text_block("do other.md now")]).card == other
    assert read_prompt(tmp_path, "cards", [text_block("hello there")]).what == "other"
    assert read_prompt(tmp_path, "cards", [text_block("cards/notes.txt")]).what == "other"
    assert read_prompt(tmp_path, "cards", [text_block("../../etc/passwd")]).what == "other"


def test_a_session_remembers_its_card_and_unknown_ids_read_nothing(tmp_path: Path) -> None:
    card = board(tmp_path)
    remember(tmp_path, "abc123", card)
    assert remembered(tmp_path, "abc123") == card
    assert remembered(tmp_path, "never") is None
    assert remembered(tmp_path, "../../outside") is None
