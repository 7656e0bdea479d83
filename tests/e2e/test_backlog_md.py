"""A Backlog.md board run as it is: the real `backlog` CLI makes the project and its tasks,
cardrunner runs one to Done (from the CLI and from the language server), and `backlog` then
shows the new status, the ticked criteria and the evidence — and reads the board without a
warning."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from cardrunner.card.card import find_cards, load_card
from cardrunner.config.loading import load_settings
from tests.support import lsp
from tests.support.backlogmd import BacklogCli, install_backlog
from tests.support.project import cli, fix_transcript, git, make_project, write_transcript


@pytest.fixture(scope="session")
def backlog_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = install_backlog(tmp_path_factory.mktemp("backlog-npm"))
    if found is None:
        pytest.skip("npm is not installed (and CARDRUNNER_BACKLOG_BIN is not set)")
    return found


def _no_warning(done: object) -> None:
    out = f"{getattr(done, 'stdout', '')}\n{getattr(done, 'stderr', '')}".lower()
    assert "warn" not in out and "error" not in out, out


def test_a_backlog_task_runs_to_done_from_the_cli(tmp_path: Path, backlog_bin: Path) -> None:
    make_project(tmp_path)
    backlog = BacklogCli(backlog_bin, tmp_path)
    backlog.init(["The tests pass."])
    backlog(
        "task",
        "create",
        "Adding two numbers subtracts them",
        "-d",
        "`add(2, 3)` returns -1.",
        "--ac",
        "`add(2, 3)` returns 5.",
    )
    backlog("task", "create", "Another one", "--ac", "Something else works.")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "the backlog")
    task = backlog.task(1)
    before = task.read_text()

    # cardrunner sees the board: its tasks are the cards, read through the project's statuses
    settings, _ = load_settings(tmp_path)
    assert settings.cards == "backlog/tasks"
    assert find_cards(tmp_path, settings.cards) == sorted([task, backlog.task(2)])
    card = load_card(task)
    assert (card.state, card.criteria) == ("New", ["`add(2, 3)` returns 5.", "The tests pass."])
    check = cli(tmp_path, "check")
    assert check.returncode == 0 and "warning" not in check.stdout + check.stderr, check.stdout

    transcript = write_transcript(tmp_path.parent / f"{tmp_path.name}-t.json", fix_transcript())
    rel = str(task.relative_to(tmp_path))
    proc = cli(tmp_path, "run", rel, "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stderr

    after = task.read_text()
    # only what the run owns changed: the status, the boxes, the run's record and its note
    assert (
        after.splitlines()[:9] == before.replace("status: To Do", "status: Done").splitlines()[:9]
    )
    assert "- [x] #1 `add(2, 3)` returns 5.\n" in after and "- [x] #1 The tests pass.\n" in after
    assert git(tmp_path, "status", "--porcelain") == ""  # the card's state was committed

    view = backlog("task", "view", "1", "--plain").stdout
    assert "Status: ✔ Done" in view, view
    assert "- [x] #1 `add(2, 3)` returns 5." in view and "- [x] #1 The tests pass." in view
    assert "cardrunner run " in view and "verified" in view  # the evidence, as a note
    listed = backlog("task", "list", "--plain")
    _no_warning(listed)
    assert "Done:\n  TASK-1 - Adding two numbers subtracts them (ac: 1/1)" in listed.stdout
    assert "To Do:\n  TASK-2 - Another one" in listed.stdout
    board = backlog("board")
    _no_warning(board)
    assert "| **TASK-2** - Another one |  | **TASK-1** - Adding two numbers" in board.stdout
    assert load_card(task).state == "Done"


# --- the same board from the language server ----------------------------------------------------


@pytest.fixture
def lsp_project(tmp_path: Path, backlog_bin: Path) -> lsp.Project:
    """The language-server project with a Backlog.md board instead of `cards/`."""
    project = lsp.make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = project.root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('cards = "cards"\n', ""))
    backlog = BacklogCli(backlog_bin, project.root)
    backlog.init(["The greeting names the user."])
    backlog("task", "create", "Greeting", "--ac", "The greeting says hello.", "--no-dod-defaults")
    project.transcript(backlog.task(1).stem, lsp.happy_transcript())
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "the backlog")
    return project


@pytest_lsp.fixture(config=lsp.server_config())
async def client(lsp_client: LanguageClient, lsp_project: lsp.Project) -> object:
    editor = lsp.Editor(lsp_client)
    editor.register()
    lsp_client.editor = editor  # type: ignore[attr-defined]
    lsp_client.project = lsp_project  # type: ignore[attr-defined]
    root = lsp_project.root.as_uri()
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root,
            workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            initialization_options={"client": {"notifications": True}},
        )
    )
    yield
    if editor.hold is not None:
        editor.hold.set()
    await lsp_client.shutdown_session()


async def test_a_backlog_task_runs_to_done_from_the_editor(
    client: LanguageClient, backlog_bin: Path
) -> None:
    project, editor = lsp.project_of(client), lsp.editor_of(client)
    backlog = BacklogCli(backlog_bin, project.root)
    task = backlog.task(1)
    uri = editor.open(task)
    editor.answers = [lsp.ACCEPT]
    # the task is a card with no problem: no "unknown key" warnings, nothing at all
    await lsp.wait_for(lambda: [p for p in editor.diagnostics if p.uri == uri], what="a publish")
    assert lsp.diags(client, uri) == []
    run = await lsp.lens_command(client, uri, "▶ Run card")
    await lsp.command(client, run.command, *(run.arguments or []))
    await lsp.wait_for(
        lambda: (editor.last_status(uri) or {}).get("state") == "done", 60, what="done"
    )
    criteria = {
        d.message
        for p in editor.diagnostics
        if p.uri == uri
        for d in p.diagnostics
        if d.code == "criterion-1"
    }
    assert any(m.startswith("verified") for m in criteria), criteria  # the project's DoD
    text = await lsp.wait_for(
        lambda: editor.text(uri) == task.read_text() and editor.text(uri),
        what=lambda: (
            f"the buffer:\n{editor.text(uri)}\nthe file:\n{task.read_text()}\n{editor.edits}"
        ),
    )
    assert "status: Done\n" in text and "- [x] #1 The greeting says hello.\n" in text
    assert "## Definition of Done\n<!-- DOD:BEGIN -->\n- [x] #1 The greeting names" in text

    view = backlog("task", "view", "1", "--plain").stdout
    assert "Status: ✔ Done" in view, view
    assert "- [x] #1 The greeting says hello." in view
    assert "- [x] #1 The greeting names the user." in view
    assert "cardrunner run " in view
    _no_warning(backlog("task", "list", "--plain"))
