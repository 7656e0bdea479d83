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
from tests.support.inprocess import InProcessEditor, started
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
    async for e in started(InProcessEditor(project.root)):
        yield e


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


async def test_an_editor_opened_at_a_package_folder_serves_the_monorepo_root(
    project: Project,
) -> None:
    """Opened at `packages/web` (VS Code's folder, `nvim packages/web/...` with a root
    pattern), the server serves what the CLI's `find_root` gives from there: the root's cards
    with the package's commands, its settings — and says once why the cards are the root's."""
    web = project.root / "packages" / "web"
    (web / "src").mkdir(parents=True)
    (web / "cardrunner.toml").write_text('[paths]\nwrite = ["src"]\n')
    card = project.write_card("greet", in_package("Greet loudly", "web"))
    e = InProcessEditor(web)
    await e.start()
    try:
        assert e.app.root == project.root.resolve()
        said = [p["message"] for p in e.sent("window/showMessage")]
        assert said == [
            f"cardrunner: {web} is package web of the monorepo at {project.root.resolve()}, "
            "so cardrunner serves the monorepo's cards and settings, as the command line does. "
            f"Open {project.root.resolve()} as the folder to see its cards beside the code."
        ]
        assert await lenses(e, e.open(card)) == ["▶ Run card", "package web (packages/web)"]
        board = await e.request(names.BOARD, None)
        titles = [c["title"] for col in board["columns"] for c in col["cards"]]
        assert titles == ["Greet loudly"]
        assert not (web / ".cardrunner").exists(), "state lives at the root, as the CLI's"
    finally:
        await e.stop()


async def test_a_folder_that_is_no_declared_package_is_served_as_given(project: Project) -> None:
    """A folder with a cardrunner.toml of its own that the root does not declare, or a declared
    package that is a repository of its own, is its own workspace: nothing is lifted or said."""
    tools = project.root / "tools"
    (tools / "cards").mkdir(parents=True)
    (tools / "cardrunner.toml").write_text('cards = "cards"\n')
    (tools / "cards" / "own.md").write_text(CARD.format(title="A tool's own card"))
    nested = project.root / "packages" / "web"
    (nested / ".git").mkdir(parents=True)
    for folder, title in ((tools, "A tool's own card"), (nested, None)):
        e = InProcessEditor(folder)
        await e.start()
        try:
            assert e.app.root == folder.resolve()
            assert e.sent("window/showMessage") == []
            board = await e.request(names.BOARD, None)
            titles = [c["title"] for col in board["columns"] for c in col["cards"]]
            assert titles == ([title] if title else [])
        finally:
            await e.stop()
