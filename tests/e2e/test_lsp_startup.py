"""The start-up seam: `initialize` is answered by pygls alone, the features load after it.

Over the real protocol with a raw JSON-RPC client: the server's debug command tells which
modules had been imported when `initialize` was handled (a snapshot taken in its handler, so
exactly what answering it cost) and which are imported now. The capabilities in the answer
must stay complete although no feature module is loaded yet.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.lsp import CARD, Project, is_forecast

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess

ANSWERS_INITIALIZE = {
    "cardrunner",
    "cardrunner.cli",
    "cardrunner.cli.entry",
    "cardrunner.lsp",
    "cardrunner.lsp.server",
    "cardrunner.lsp.handlers",
    "cardrunner.lsp.core",
    "cardrunner.lsp.core.client",
    "cardrunner.lsp.core.protocolnames",
    "cardrunner.lsp.core.lifeline",
    "cardrunner.lsp.core.pipes",
    "cardrunner.lsp.core.protocol",
    "cardrunner.processes",
    "cardrunner.processes.groups",
}
"""The only modules of ours that answering `initialize` may import (a new one is a decision)."""

LOADED_AFTER = ("pydantic", "yaml", "watchfiles", "importlib.metadata")
"""What the features stand on: none of it may be imported to answer `initialize` either."""

COMMANDS = [
    "cardrunner.runCard",
    "cardrunner.resumeRun",
    "cardrunner.cancelRun",
    "cardrunner.acceptChanges",
    "cardrunner.rejectChanges",
    "cardrunner.showDiff",
    "cardrunner.showLog",
    "cardrunner.toggleHunk",
    "cardrunner.setState",
    "cardrunner.debug.modules",
    "cardrunner.debug.index",
]


def too_early(modules: list[str]) -> list[str]:
    """The modules in `modules` that must wait until `initialize` is answered."""
    ours = [m for m in modules if m.partition(".")[0] == "cardrunner"]
    theirs = [m for m in modules if any(m == h or m.startswith(h + ".") for h in LOADED_AFTER)]
    return sorted(set(ours) - ANSWERS_INITIALIZE) + theirs


async def start(root: Path) -> tuple[LspProcess, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=root, env=env)
    await server.spawn()
    answer = await server.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
            "capabilities": {
                "workspace": {"codeLens": {"refreshSupport": True}},
                "textDocument": {"codeLens": {}, "hover": {}, "publishDiagnostics": {}},
            },
        },
    )
    return server, answer


async def debug_modules(server: LspProcess) -> dict[str, Any]:
    result: dict[str, Any] = await server.request(
        "workspace/executeCommand", {"command": "cardrunner.debug.modules", "arguments": []}
    )
    return result


async def test_initialize_is_answered_before_the_features_load(lsp_project: Project) -> None:
    server, answer = await start(lsp_project.root)
    try:
        caps = answer["capabilities"]
        assert caps["executeCommandProvider"]["commands"] == COMMANDS
        assert caps["codeLensProvider"] == {"resolveProvider": False}
        assert caps["hoverProvider"] is True and caps["codeActionProvider"] is True
        assert caps["workspaceSymbolProvider"] == {"resolveProvider": False}
        assert caps["textDocumentSync"]["openClose"] is True
        assert caps["textDocumentSync"]["change"] == 2  # incremental

        at_initialize = (await debug_modules(server))["importedAtInitialize"]
        assert {"pygls.lsp.server", "lsprotocol.types", "cardrunner.lsp.server"} <= set(
            at_initialize
        ), "the snapshot is the server's own"
        assert too_early(at_initialize) == []

        # … and they are what the features load once `initialize` is answered.
        server.notify("initialized", {})
        assert await server.settled(), "the start-up work ended"
        later = await debug_modules(server)
        assert later["loaded"] is True
        assert "yaml" in later["topLevel"]  # the cards; the settings' pydantic is a child's
        assert "pydantic" not in later["topLevel"]
        if sys.platform.startswith("linux"):  # watched with inotify: the fallback never loads
            assert not {"watchfiles", "anyio"} & set(later["topLevel"])
    finally:
        await server.close()


async def test_a_request_right_after_the_answer_finds_the_features(
    lsp_project: Project,
) -> None:
    """A client that asks at once, before saying `initialized`, still gets full answers: the
    features (and the settings that say where cards live) are built before its request."""
    card = lsp_project.write_card("greeting")
    server, _ = await start(lsp_project.root)
    try:
        lenses = await server.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        titles = [lens["command"]["title"] for lens in lenses]
        assert [t for t in titles if not is_forecast(t)] == ["▶ Run card"]
    finally:
        await server.close()


SHADOWS = ("yaml", "pydantic", "watchfiles", "lsprotocol")
"""Libraries the server imports once it runs: a workspace could ship a module of each name."""


async def test_no_module_the_workspace_ships_is_imported_however_the_server_starts(
    lsp_project: Project, tmp_path: Path
) -> None:
    marker = tmp_path / "imported"
    for name in SHADOWS:
        (lsp_project.root / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"
        )
    lsp_project.write_card("greeting")
    console = Path(sys.executable).parent / "cardrunner"
    launches = [
        [sys.executable, "-P", "-m", "cardrunner", "lsp"],  # the VS Code client, docs/editors.md
        [sys.executable, "-m", "cardrunner", "lsp"],  # an editor config without -P
        [str(console), "lsp"],  # the console script
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    for argv in launches:
        server = LspProcess(argv, cwd=lsp_project.root, env=env)
        await server.spawn()
        try:
            await server.initialize(lsp_project.root)
            assert await server.settled(), argv
            assert (await debug_modules(server))["loaded"] is True, argv
        finally:
            await server.close()
        assert not marker.exists(), f"{argv} imported {marker.read_text()!r} from the workspace"
    control = [sys.executable, "-c", "import yaml"]
    await asyncio.to_thread(subprocess.run, control, cwd=lsp_project.root, check=True)
    assert marker.read_text() == "yaml\n"  # the control: a plain interpreter there takes it


async def test_an_idle_server_validates_its_settings_without_loading_pydantic(
    lsp_project: Project,
) -> None:
    """The settings are validated in a child process (config/loading.py): the idle server
    follows them (the cards folder, the forecast's limit) and shows their problems as before,
    and has never imported pydantic — through start-up, lenses and a settings change."""
    toml = lsp_project.root / "cardrunner.toml"
    text = toml.read_text().replace('cards = "cards"', 'cards = "tasks"\nrun_priority = "normal"')
    toml.write_text(text.replace("[limits]\n", "[limits]\nmax_cost_usd = 0.01\n"))
    card = lsp_project.root / "tasks" / "greeting.md"
    card.parent.mkdir()
    card.write_text(CARD.format(title="greeting"))
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=lsp_project.root)
    await server.spawn()
    try:
        await server.initialize(lsp_project.root)
        assert await server.settled()
        warning = await server.wait_for(lambda r: r.method == "window/showMessage", 30)
        said = warning.params["message"]
        assert said.startswith("cardrunner: invalid settings, defaults used instead:")
        assert "run_priority" in said and "'lowest'" in said
        lenses = await server.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        forecast = [t for t in (lens["command"]["title"] for lens in lenses) if is_forecast(t)]
        assert forecast and "$0.01" in forecast[0], forecast  # the limit caps the forecast
        assert "pydantic" not in (await debug_modules(server))["topLevel"]
        before = len(server.received)
        toml.write_text(toml.read_text().replace('"normal"', '"sometimes"'))
        server.notify("workspace/didChangeConfiguration", {"settings": None})
        again = await server.wait_for(lambda r: r.method == "window/showMessage", 30, before)
        assert '(got "sometimes")' in again.params["message"]
        assert "pydantic" not in (await debug_modules(server))["topLevel"]
    finally:
        await server.close()
