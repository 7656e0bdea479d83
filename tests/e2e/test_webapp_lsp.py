"""The web app's card from the editor (issue 39): the same run through the language server.

flaskr set up as docs/webapp.md says (tests/support/webapp.py), plus `replay`; the server is
started with the project's own interpreter, as an editor started in the project would. The
editor's defaults hold, so the run works in a worktree, with the real Playwright MCP on the
distribution's chromium looking at the real app. It must end Done after the review, both
criteria verified by the browser, with no browser file in the work tree or the commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from tests.e2e.test_webapp import _no_browser_files
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
from tests.support.webapp import good_transcript, make_webapp


@pytest.mark.timeout(420)  # flaskr's tests, twice, and the browser, on a shared machine
async def test_the_fix_ends_done_from_the_editor(tmp_path: Path) -> None:
    root = tmp_path / "flaskr"
    transcript = tmp_path / "flaskr-transcripts" / "done.json"
    app = make_webapp(root, extra_toml=f'replay = "{transcript}"\n')
    assert app.play("done", good_transcript(app.root, app.port)) == transcript
    start = git(root, "rev-parse", "HEAD").strip()
    config = ClientServerConfig([app.python, "-m", "cardrunner", "lsp"], make_client, app.env())
    client = await config.start()
    try:
        editor = Editor(client)
        editor.register()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="flaskr")],
                initialization_options={"client": {"notifications": True}},
            )
        )
        editor.answers = [ACCEPT]
        uri = editor.open(root / app.card)
        await command(client, "cardrunner.runCard", uri)
        await wait_for(
            lambda: (editor.last_status(uri) or {}).get("state") in ("done", "verified", "failed"),
            360,
            lambda: f"the run to end: {editor.last_status(uri)}",
        )
        status = editor.last_status(uri) or {}
        assert status["state"] == "done", status
        assert front_matter(editor.text(uri))["state"] == "Done"
        change = git(root, "log", "--format=%B", f"{start}..main")
        assert "Criterion-1: verified in the app — mcp__browser__browser_find toolu_posts" in change
        assert "Criterion-2: verified in the app — mcp__browser__browser_find toolu_login" in change
        _no_browser_files(app, f"{start}..main")
        assert_only_parked_worktrees(root)
        await client.shutdown_session()
    finally:
        await client.stop()
