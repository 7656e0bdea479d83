"""A card's own choices and dependencies in the editor: the lens, the board and the Run command.

The real server answers an in-process editor (tests/support/inprocess.py); a blocked card must
say why instead of offering ▶ Run, refuse a plain Run, and the board must carry the same.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cardrunner.lsp.core import protocolnames as names
from tests.support.inprocess import InProcessEditor, started
from tests.support.lsp import CARD, Project, is_forecast, make_project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def editor(project: Project) -> AsyncIterator[InProcessEditor]:
    async for e in started(InProcessEditor(project.root)):
        yield e


def with_front(title: str, extra: str, state: str = "New") -> str:
    text = CARD.format(title=title).replace("state: New", f"state: {state}")
    return text.replace("category: Improvement\n", f"category: Improvement\n{extra}")


async def lens_titles(editor: InProcessEditor, uri: str) -> list[str]:
    found: list[dict[str, Any]] = await editor.request(
        "textDocument/codeLens", {"textDocument": {"uri": uri}}
    )
    return [t for lens in found if not is_forecast(t := lens["command"]["title"])]


def board_card(board: dict[str, Any], title: str) -> dict[str, Any]:
    return next(c for col in board["columns"] for c in col["cards"] if c["title"] == title)


async def test_a_card_waiting_for_another_shows_why_and_refuses_a_plain_run(
    editor: InProcessEditor, project: Project
) -> None:
    project.write_card("login", title="Add login")
    card = project.write_card("profile", with_front("Profile page", "depends_on: Add login\n"))
    await editor.app.rescan()
    uri = editor.open(card)
    assert await lens_titles(editor, uri) == ['⏸ waits for "Add login" (New)', "Run anyway"]
    answer = await editor.command(names.RUN, uri)
    assert "waits for" in answer["error"] and "Run anyway" in answer["error"]
    assert editor.app.runs.manager.get(card) is None, "no run was started"
    board = await editor.request(names.BOARD, None)
    shown = board_card(board, "Profile page")
    assert shown["blocked"] == 'waits for "Add login" (New)'
    assert shown["dependsOn"] == ["Add login"]
    assert [a["title"] for a in shown["actions"]][:2] == [
        '⏸ waits for "Add login" (New)',
        "Run anyway",
    ]


async def test_a_card_whose_dependency_is_done_offers_run(
    editor: InProcessEditor, project: Project
) -> None:
    project.write_card("login", with_front("Add login", "", state="Done"))
    card = project.write_card(
        "profile", with_front("Profile page", "depends_on: [cards/login.md]\n")
    )
    await editor.app.rescan()
    uri = editor.open(card)
    assert await lens_titles(editor, uri) == ["▶ Run card"]
    board = await editor.request(names.BOARD, None)
    assert board_card(board, "Profile page")["blocked"] is None


async def test_the_card_choices_are_a_lens_and_on_the_board(
    editor: InProcessEditor, project: Project
) -> None:
    extra = "model: claude-haiku-5-5\neffort: low\nmax_rounds: 10\nmax_cost_usd: 0.5\n"
    card = project.write_card("cheap", with_front("Cheap card", extra))
    await editor.app.rescan()
    uri = editor.open(card)
    choices = "model claude-haiku-5-5 · effort low · ≤ 10 rounds · ≤ $0.50"
    assert await lens_titles(editor, uri) == ["▶ Run card", choices]
    board = await editor.request(names.BOARD, None)
    assert board_card(board, "Cheap card")["choices"] == choices
    assert [a["title"] for a in board_card(board, "Cheap card")["actions"]] == ["▶ Run card"]
