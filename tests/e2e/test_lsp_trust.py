"""The trust question in the editor: the real `cardrunner lsp` asks through
`window/showMessageRequest` before the first run, and the test answers it as a user would.

The repository's config is the attacker's (tests/support/trust.py): build and test commands are
payloads that leave their name in a marker outside the repository, the sandbox is off. The
server's user folder is this module's own, and CARDRUNNER_TRUST is not set (tests/conftest.py
sets it for the rest of the suite).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.lsp import (
    ACCEPT,
    Editor,
    Project,
    command,
    editor_of,
    front_matter,
    git,
    happy_transcript,
    make_client,
    project_of,
    wait_for,
)
from tests.support.trust import hostile_toml, ran, untrusted_env

USER = Path(tempfile.mkdtemp(prefix="user-", dir=os.environ["XDG_CONFIG_HOME"]))
"""This module's user folder (inside the session's, which tests/conftest.py removes)."""
TRUST, DONT = "Trust and run", "Don't run"


def _config() -> ClientServerConfig:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "cardrunner", "lsp"],
        client_factory=make_client,
        server_env={**env, **untrusted_env(USER)},
    )


@pytest_lsp.fixture(config=_config())
async def untrusted(lsp_client: LanguageClient, lsp_project: Project) -> Any:
    """A VS Code-like client on a hostile repository, for a user who trusted nothing yet."""
    root = lsp_project.root
    marker = root.parent / "marker"
    toml = hostile_toml(marker).replace('read = ["/", ".."]', 'read = ["."]')
    (root / "cardrunner.toml").write_text(f'cards = "cards"\nreplay = "transcripts"\n{toml}')
    git(root, "commit", "-qam", "a friendly project")
    editor = Editor(lsp_client)
    editor.register()
    lsp_client.editor = editor  # type: ignore[attr-defined]
    lsp_client.project = lsp_project  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
            initialization_options={"client": {"notifications": True}},
        )
    )
    yield
    await lsp_client.shutdown_session()


def real(path: Path) -> str:
    """The key a grant is stored under: the repository's real path."""
    return os.path.realpath(path)


def grants() -> dict[str, Any]:
    path = USER / "cardrunner" / "trusted.json"
    return json.loads(path.read_text()) if path.exists() else {}


async def run_card(client: LanguageClient, name: str) -> str:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card(name, title=f"Card {name}")
    project.transcript(name, happy_transcript())
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", f"card {name}")
    uri = editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    return uri


async def ended(client: LanguageClient, uri: str) -> dict[str, Any]:
    editor = editor_of(client)
    await wait_for(
        lambda: (editor.last_status(uri) or {}).get("state") in ("done", "verified", "failed"),
        within=120,
        what=lambda: f"the run's end; last status {editor.last_status(uri)}",
    )
    return editor.last_status(uri) or {}


async def test_a_no_in_the_editor_runs_nothing_and_leaves_the_card(untrusted: Any) -> None:
    client: LanguageClient = untrusted
    project, editor = project_of(client), editor_of(client)
    editor.answers = [DONT]
    uri = await run_card(client, "refused")
    status = await ended(client, uri)
    [question] = editor.questions
    assert question.type == types.MessageType.Warning
    assert "test command:" in question.message and "sandbox OFF" in question.message
    assert [a.title for a in question.actions or []] == [DONT, TRUST]
    assert status["state"] == "failed" and status["reason"] == "config_error"
    assert ran(project.root.parent / "marker") == set()
    assert front_matter(editor.text(uri))["state"] == "New"
    assert git(project.root, "status", "--porcelain") == ""
    assert real(project.root) not in grants()


async def test_trust_in_the_editor_runs_is_remembered_and_a_change_asks_again(
    untrusted: Any,
) -> None:
    client: LanguageClient = untrusted
    project, editor = project_of(client), editor_of(client)
    marker = project.root.parent / "marker"
    editor.answers = [TRUST, ACCEPT]
    uri = await run_card(client, "first")
    assert (await ended(client, uri))["state"] == "done"
    assert "test" in ran(marker) and ran(marker) <= {"build", "test"}
    assert list(grants()) == [real(project.root)]
    assert "Trust this repository" in editor.questions[0].message

    editor.answers = [ACCEPT]  # trusted: no question (the change is in, nothing to review)
    uri = await run_card(client, "second")
    assert (await ended(client, uri))["state"] == "verified"
    assert not any("Trust this" in q.message for q in editor.questions[1:])

    toml = project.root / "cardrunner.toml"
    network = 'sandbox = { mode = "off", network = true }'
    toml.write_text(toml.read_text().replace('sandbox = "off"', network))
    marker.unlink()
    asked = len(editor.questions)
    editor.answers = []  # dismissed
    uri = await run_card(client, "third")
    assert (await ended(client, uri))["reason"] == "config_error"
    question = editor.questions[asked].message
    assert "changed since you trusted them" in question and "network" in question
    assert ran(marker) == set()
