"""Asking before a Done card runs again (the terminal's side; the CLI test covers no tty)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.cli.confirm import refuse_rerun

DONE = """---
title: Sum
state: Done
runs:
- id: 20261201-080000-sum
  result: done
  commit: 0123456789abcdef
---
Body.

**Acceptance criteria**

- It sums.
"""


@pytest.fixture
def done_card(tmp_path: Path) -> Path:
    card = tmp_path / "sum.md"
    card.write_text(DONE)
    return card


def test_the_question_names_the_last_run_and_yes_lets_it_run(done_card: Path) -> None:
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return "y"

    assert refuse_rerun(done_card, yes=False, tty=True, ask=ask) is None
    assert asked == [
        "sum.md is already Done (last run 20261201-080000-sum, commit 0123456789). "
        "Run it again? [y/N] "
    ]


@pytest.mark.parametrize("answer", ["", "n", "no", "maybe"])
def test_anything_but_yes_keeps_it_done(done_card: Path, answer: str) -> None:
    refusal = refuse_rerun(done_card, yes=False, tty=True, ask=lambda _: answer)
    assert refusal == "sum.md was not run again (it stays Done)"


def test_end_of_input_is_a_no(done_card: Path) -> None:
    def closed(_: str) -> str:
        raise EOFError

    assert refuse_rerun(done_card, yes=False, tty=True, ask=closed) is not None


def test_yes_and_cards_not_done_never_ask(done_card: Path, tmp_path: Path) -> None:
    def never(_: str) -> str:
        raise AssertionError("asked")

    assert refuse_rerun(done_card, yes=True, tty=False, ask=never) is None
    new = tmp_path / "new.md"
    new.write_text(DONE.replace("state: Done", "state: Failed"))
    assert refuse_rerun(new, yes=False, tty=False, ask=never) is None
