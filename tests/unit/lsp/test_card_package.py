"""A monorepo card's package in the editor: the lens, the hover and the board say which
package's commands test the card, or why none could (its run would be refused), from the
settings the idle server reads (`SettingsView.package`, no pydantic)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cardrunner.lsp.core import protocolnames as names
from tests.support.inprocess import InProcessEditor
from tests.support.lsp import CARD, Project, is_forecast, make_project

PACKAGES = """
[packages.web]
path = "packages/web"
[packages.web.commands]
test = ["npm", "test"]
[packages.docs]
path = "packages/docs"
"""


@pytest.fixture
def project(tmp_path: Path) -> Project:
    made = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = made.root / "cardrunner.toml"
    toml.write_text(toml.read_text() + PACKAGES)
    return made


@pytest.fixture
async def editor(project: Project) -> AsyncIterator[InProcessEditor]:
    e = InProcessEditor(project.root)
    await e.start()
    try:
        yield e
    finally:
        await e.stop()


def in_package(title: str, package: str) -> str:
    return CARD.format(title=title).replace("state: New\n", f"state: New\npackage: {package}\n")


async def lenses(editor: InProcessEditor, uri: str) -> list[str]:
    found: list[dict[str, Any]] = await editor.request(
        "textDocument/codeLens", {"textDocument": {"uri": uri}}
    )
    return [t for lens in found if not is_forecast(t := lens["command"]["title"])]


async def title_hover(editor: InProcessEditor, uri: str) -> str:
    said = await editor.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 2}},
    )
    return str(said["contents"]["value"])


async def test_a_package_card_shows_its_package_and_an_untestable_one_why(
    editor: InProcessEditor, project: Project
) -> None:
    web = project.write_card("greet", in_package("Greet loudly", "web"))
    docs = project.write_card("docs", in_package("Document it", "docs"))
    await editor.app.rescan()
    web_uri, docs_uri = editor.open(web), editor.open(docs)
    assert await lenses(editor, web_uri) == ["▶ Run card", "package web (packages/web)"]
    refused = await lenses(editor, docs_uri)
    assert (
        refused[1]
        == "✗ package 'docs' (packages/docs) has no build or test command, and a card is never tested with another package's commands"
    ), refused
    assert (await title_hover(editor, web_uri)).endswith("\n\npackage web (packages/web)")
    assert "has no build or test command" in await title_hover(editor, docs_uri)
    board = await editor.request(names.BOARD, None)
    cards = {c["title"]: c for col in board["columns"] for c in col["cards"]}
    assert cards["Greet loudly"]["package"] == "package web (packages/web)"
    assert cards["Document it"]["package"] == ""
