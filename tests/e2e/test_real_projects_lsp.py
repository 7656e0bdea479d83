"""The real projects through the language server, as an editor runs a card (issue 23).

The server is started the way an editor starts it in each project — with the interpreter that
has cardrunner installed there (a Python project's own virtualenv) — on a fresh git repository
whose cardrunner.toml is the one docs/configuration.md gives, plus `replay` (docs/transcripts.md,
trying cardrunner without a key). The editor's defaults hold, so the run is isolated in a
worktree. A harmless change must end Done, committed on the user's branch after the review.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from tests.support.ecosystems import ECOSYSTEMS, make_real_project
from tests.support.lsp import (
    ACCEPT,
    Editor,
    assert_only_parked_worktrees,
    command,
    front_matter,
    git,
    make_client,
    wait_for,
)


@pytest.mark.parametrize("key", list(ECOSYSTEMS))
async def test_a_harmless_change_ends_done_from_the_editor(key: str, tmp_path: Path) -> None:
    root = tmp_path / key
    transcript = tmp_path / f"{key}-transcripts" / "done.json"
    project = make_real_project(key, root, extra_toml=f'replay = "{transcript}"\n')
    assert project.play("done", project.eco.done) == transcript
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CI"))}
    config = ClientServerConfig([project.python, "-m", "cardrunner", "lsp"], make_client, env)
    client = await config.start()
    try:
        editor = Editor(client)
        editor.register()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=key)],
                initialization_options={"client": {"notifications": True}},
            )
        )
        editor.answers = [ACCEPT]
        uri = editor.open(root / project.card)
        await command(client, "cardrunner.runCard", uri)
        await wait_for(
            lambda: (editor.last_status(uri) or {}).get("state") in ("done", "failed"),
            300,
            lambda: f"the run to end: {editor.last_status(uri)}",
        )
        status = editor.last_status(uri) or {}
        assert status["state"] == "done", status
        assert front_matter(editor.text(uri))["state"] == "Done"
        subjects = git(root, "log", "--format=%s", "main")
        assert f"card: Document {project.eco.topic}\n" in subjects
        assert_only_parked_worktrees(root)
        await client.shutdown_session()
    finally:
        await client.stop()
