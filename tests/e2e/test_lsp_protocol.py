"""Protocol hygiene with a raw JSON-RPC client: every request is answered, bad ones with a
proper error and no pop-up, and custom notifications go only to clients that ask for them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp import Project, happy_transcript

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess


async def serve(root: Path, init_options: Any = None) -> LspProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=root, env=env)
    await server.spawn()
    params = {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "capabilities": {"textDocument": {"codeLens": {}, "publishDiagnostics": {}}},
        "initializationOptions": init_options,
    }
    await server.request("initialize", params)
    server.notify("initialized", {})
    return server


async def error_of(server: LspProcess, method: str, params: Any) -> str:
    with pytest.raises(RuntimeError, match="LSP error") as caught:
        await server.request(method, params, within=10)
    return str(caught.value)


async def test_bad_params_get_an_invalid_params_error_and_no_pop_up(lsp_project: Project) -> None:
    server = await serve(lsp_project.root)
    try:
        assert "-32602" in await error_of(server, "textDocument/codeLens", {})
        assert "-32602" in await error_of(server, "textDocument/hover", {"textDocument": 3})
        server.notify("textDocument/didOpen", {"textDocument": "nonsense"})  # no answer due
        card = lsp_project.write_card("fine")
        lenses = await server.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        assert lenses[0]["command"]["title"] == "▶ Run card", "the server goes on answering"
        assert [r for r in server.received if r.method == "window/showMessage"] == []
    finally:
        await server.close()


async def test_requests_after_shutdown_are_answered_with_an_error(lsp_project: Project) -> None:
    server = await serve(lsp_project.root)
    try:
        await server.request("shutdown", None)
        assert "-32600" in await error_of(
            server, "textDocument/codeLens", {"textDocument": {"uri": "file:///x.md"}}
        )
        server.notify("exit", None)
        assert server.proc is not None
        assert await server.proc.wait() == 0
    finally:
        await server.close()


@pytest.mark.parametrize("asks", [False, True])
async def test_custom_notifications_only_for_clients_that_ask(
    lsp_project: Project, asks: bool
) -> None:
    project = lsp_project
    card = project.write_card("greeting")
    project.transcript("greeting", happy_transcript())
    options = {"client": {"notifications": True}} if asks else {"limits": {"max_rounds": 12}}
    server = await serve(project.root, options)
    try:
        await server.request(
            "workspace/executeCommand",
            {"command": "cardrunner.runCard", "arguments": [card.as_uri()]},
        )
        await server.wait_for(lambda r: r.method == "window/showMessageRequest", 30)
        await server.request(
            "workspace/executeCommand",
            {"command": "cardrunner.acceptChanges", "arguments": [card.as_uri()]},
        )
        await server.wait_for(
            lambda r: (
                r.method == "textDocument/publishDiagnostics"
                and any(d.get("code") == "result" for d in r.params["diagnostics"])
            ),
            30,
        )
        custom = {r.method for r in server.received if r.method.startswith("cardrunner/")}
        assert custom == ({"cardrunner/runStatus", "cardrunner/reviewRequested"} if asks else set())
        assert not [r for r in server.received if r.method == "window/showMessage"], "valid options"
    finally:
        await server.close()
