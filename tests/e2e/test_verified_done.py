"""Done through the real SDK: a model that claims too early is told why, verifies, and ends Done.

The language server runs as a real subprocess with the real `anthropic` SDK talking HTTP to the
project's strict fake Messages API (no transcript replay), a real git repository, and the
pytest-lsp client as the editor. The ledger must then be in the log, on the card, in the commit's
trailers and in the criterion's diagnostic.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.lsp import (
    ACCEPT,
    GOOD_APP,
    Editor,
    Project,
    command,
    diag_codes,
    final,
    front_matter,
    git,
    make_client,
    make_project,
    tool,
    turn,
    verify_greeting,
    wait_for,
)


def _free_port() -> int:
    """A port that is free now and stays free: below the kernel's ephemeral range, which every
    connection the suite opens draws from (a port from `bind(0)`, reserved at import and bound
    minutes later, was once taken by then), starting at a place this process picks."""
    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    start = 20000 + os.getpid() % 5000
    for port in [*range(start, low), *range(10000, start)]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


PORT = _free_port()
"""The fake API's port, known before the server starts (its environment names it)."""

CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "cardrunner", "lsp"],
    client_factory=make_client,
    server_env={
        **{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{PORT}",
        "ANTHROPIC_API_KEY": "sk-test-verified",
    },
)


@pytest.fixture
def api_project(tmp_path: Path) -> Project:
    """The LSP test workspace without transcripts: the server calls the (fake) API."""
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = project.root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('replay = "transcripts"\n', ""))
    git(project.root, "commit", "-qam", "no replay: the model is the API")
    return project


@pytest_lsp.fixture(config=CONFIG)
async def api_client(lsp_client: LanguageClient, api_project: Project) -> Any:
    editor = Editor(lsp_client)
    editor.register()
    lsp_client.editor = editor  # type: ignore[attr-defined]
    root = api_project.root.as_uri()
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root,
            workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            initialization_options={"client": {"notifications": True}},
        )
    )
    yield
    await lsp_client.shutdown_session()


def too_early_then_verified() -> list[dict[str, Any]]:
    return [
        turn(tool("write_file", path="src/app.py", content=GOOD_APP)),
        final("The greeting is fixed.\nRESULT: done"),  # no evidence, no commit
        turn(
            *verify_greeting(),
            tool("git_commit", message="card: greeting\n\nSay hello with the name."),
        ),
        final("Verified and committed.\nRESULT: done"),
    ]


async def test_a_claim_too_early_is_answered_then_verified_work_ends_done(
    api_client: LanguageClient, api_project: Project
) -> None:
    editor: Editor = api_client.editor  # type: ignore[attr-defined]
    editor.answers = [ACCEPT]
    card = api_project.write_card("greeting", title="Greeting says hello")
    uri = editor.open(card)
    async with FakeMessagesAPI(too_early_then_verified(), port=PORT) as api:
        started = await command(api_client, "cardrunner.runCard", uri)
        await wait_for(
            lambda: (editor.last_status(uri) or {}).get("state") in ("done", "failed"),
            60,
            lambda: f"the run to end: {editor.last_status(uri)}",
        )
        assert not api.violations, api.violations
        api.assert_complete()
        calls = [r for r in api.requests if r.index is not None]
        told = json.dumps(calls[2].body["messages"][-1])  # what the third model call carried
    assert (editor.last_status(uri) or {})["state"] == "done"
    assert "[cardrunner] The run cannot end on this answer yet" in told
    assert "your changes are not committed" in told

    log = api_project.log_lines(started["runId"])
    assert [r["data"]["attempt"] for r in log if r["type"] == "objection"] == [1]
    ledger = log[-1]["data"]["ledger"]
    commit = log[-1]["data"]["commit"]
    assert [e["status"] for e in ledger] == ["verified", "verified"]
    assert {e["commit"] for e in ledger} == {commit}
    assert ledger[0]["cites"][0]["quote"] == 'return f"hello'
    saved = api_project.root / ledger[0]["cites"][0]["artifact"]
    assert saved.read_text() == GOOD_APP, "the cited result is kept under the run's folder"

    message = git(api_project.root, "log", "-1", "--format=%B", commit)
    assert 'Criterion-1: verified — read_file toolu_read_app: "return f"hello"' in message
    assert "Criterion-2: verified" in message and "Checks: build ok · test ok" in message

    record = front_matter(editor.text(uri))["last_run"]
    assert record["outcome"] == "committed"
    assert "evidence" not in record, "the card keeps a short record"
    card_commit = git(api_project.root, "log", "-1", "--format=%B", "HEAD")
    assert f"Evidence: 1. verified on {commit[:10]}" in card_commit, "the ledger is in git"

    diagnostic = diag_codes(api_client, uri)["criterion-1"]
    assert diagnostic.message.startswith(f"verified (checked on {commit[:10]})")
    assert 'read_file toolu_read_app: "return f"hello"' in diagnostic.message
