"""Cards are parsed with size, alias and depth limits in every path that reads or writes them."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from cardrunner.card import text as text_module
from cardrunner.card.card import CardError, load_card, parse_card, write_card
from cardrunner.card.record import CardUpdate
from cardrunner.card.text import MAX_ALIASES, MAX_FRONT_MATTER_CHARS, CardLimitError
from cardrunner.card.writeback import update_card_text
from tests.support.project import cli, final, make_project, write_transcript

BODY = "Text.\n\n**Acceptance criteria**\n\n- It works.\n"


def alias_bomb() -> str:
    """Nine levels of nine aliases: under 600 bytes, 9⁹ values once expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghi"
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "---\ntitle: Bomb\nstate: New\n" + "\n".join(lines) + "\n---\n" + BODY


def test_the_bomb_is_small() -> None:
    assert len(alias_bomb().encode()) < 600


@pytest.mark.parametrize(
    ("front", "says"),
    [
        (alias_bomb().split("---\n")[1], "aliases expand to more than 100,000 values"),
        ("title: x\nk: &k 1\n" + "".join(f"v{i}: *k\n" for i in range(MAX_ALIASES + 1)), "aliases"),
        ("title: x\nk: " + "[" * 80 + "]" * 80 + "\n", "nested deeper than 64 levels"),
        ("title: x\nk: '" + "x" * MAX_FRONT_MATTER_CHARS + "'\n", "longer than"),
    ],
)
def test_every_reader_and_writer_refuses_a_hostile_front_matter(
    tmp_path: Path, front: str, says: str
) -> None:
    text = "---\n" + front + "---\n" + BODY
    card, problems = parse_card(text, tmp_path / "c.md")
    assert card is None and says in problems[0].message
    path = tmp_path / "c.md"
    path.write_text(text)
    with pytest.raises(CardError, match=says):
        load_card(path)
    with pytest.raises(ValueError, match=says):
        update_card_text(text, state="In Work")
    with pytest.raises(CardError, match=says):
        write_card(path, CardUpdate(state="In Work"))
    assert path.read_text() == text  # nothing written


@pytest.mark.parametrize(
    "front",
    [
        alias_bomb().split("---\n")[1],
        "title: x\nk: &k 1\n" + "".join(f"v{i}: *k\n" for i in range(MAX_ALIASES + 1)),
        "title: x\nk: " + "[" * 80 + "]" * 80 + "\n",
        "title: x\nk:\n" + "- " * 80 + "x\n",
    ],
)
def test_the_libyaml_loader_enforces_the_same_bounds_itself(front: str) -> None:
    """Not only through the fallback: libyaml's events go through the bounded composer."""
    if text_module._CLoader is None:
        pytest.skip("PyYAML without libyaml")
    refusals = []
    for loader in (text_module._CLoader, text_module._PythonLoader):
        with pytest.raises(CardLimitError) as refused:
            text_module._compose_with(loader, front)
        mark = refused.value.problem_mark
        refusals.append((refused.value.problem, mark.index if mark else None))
    assert refusals[0] == refusals[1]


def test_ordinary_aliases_still_work(tmp_path: Path) -> None:
    text = "---\ntitle: x\nstate: New\ntags: &t [a, b]\nalso: *t\n---\n" + BODY
    card, problems = parse_card(text, tmp_path / "c.md")
    assert card is not None and not [p for p in problems if p.severity == "error"]


def test_a_fifo_card_fails_fast(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(CardError, match="FIFO"):
        load_card(tmp_path / "pipe.md")


def test_the_cli_refuses_the_bomb_at_once(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "cards" / "bomb.md").write_text(alias_bomb())
    checked = cli(tmp_path, "check", "cards/bomb.md", timeout=60)
    assert checked.returncode == 1 and "aliases expand" in checked.stdout
    transcript = write_transcript(tmp_path / "t.json", [final()])
    ran = cli(tmp_path, "run", "cards/bomb.md", "--replay", str(transcript), "--yes", timeout=60)
    assert ran.returncode == 2 and "aliases expand" in ran.stdout + ran.stderr
