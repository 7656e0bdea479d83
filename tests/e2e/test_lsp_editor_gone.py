"""Losing the editor mid-run: end of input, `exit` without `shutdown`, the editor's death.

Each is handled like a cancel — the run's processes stop, its log gets a result, the card on
disk says `Failed` / `interrupted` — and the server ends at once with the spec's status (1:
no `shutdown` came first). The next server shows the card interrupted and offers Resume. The
server is driven by a raw JSON-RPC client here, so the test owns its pipes and its exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from asyncio.subprocess import Process
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp import (
    Project,
    front_matter,
    processes_with,
    slow_transcript,
    wait_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess, Received

EXIT_WITHIN = 5.0
"""Seconds the test waits for the server to end (it aims at one; the machine is shared)."""


def server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


async def serve(root: Path, process_id: int | None = None) -> LspProcess:
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=root, env=server_env())
    await server.spawn()
    await server.initialize(root, process_id)
    return server


async def start_slow_run(project: Project) -> tuple[LspProcess, Path, str, Process]:
    """A server whose "editor" is a sleeping process, running a card that sits in its tests."""
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    editor = await asyncio.create_subprocess_exec("sleep", "600")
    server = await serve(project.root, editor.pid)
    result = await server.request(
        "workspace/executeCommand",
        {"command": "cardrunner.runCard", "arguments": [card.as_uri()]},
    )
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")
    return server, card, str(result["runId"]), editor


async def lose_the_editor(how: str, server: LspProcess, editor: Process) -> None:
    assert server.proc is not None and server.proc.stdin is not None
    if how == "end of input":
        server.proc.stdin.close()
    elif how == "shutdown, then end of input":  # Neovim's :qa! does not wait for the answer
        server._send({"id": 9999, "method": "shutdown", "params": None})  # answer not awaited
        server.proc.stdin.close()
    elif how == "exit":
        server.notify("exit", None)
    else:
        editor.send_signal(signal.SIGKILL)
        await editor.wait()


async def stop(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    await process.wait()


def interrupted(uri: str) -> Any:
    def match(r: Received) -> bool:
        return (
            r.method == "textDocument/publishDiagnostics"
            and r.params["uri"] == uri
            and any(d.get("code") == "interrupted" for d in r.params["diagnostics"])
        )

    return match


@pytest.mark.parametrize(
    "how", ["end of input", "exit", "parent death", "shutdown, then end of input"]
)
async def test_losing_the_editor_stops_the_run_and_records_it(
    lsp_project: Project, how: str
) -> None:
    project = lsp_project
    server, card, run_id, editor = await start_slow_run(project)
    try:
        await lose_the_editor(how, server, editor)
        assert server.proc is not None
        async with asyncio.timeout(EXIT_WITHIN):
            code = await server.proc.wait()
    finally:
        await stop(editor)
        await server.close()
    if how.startswith("shutdown"):
        assert code == 0, "shutdown came first: the spec's status is 0"
    else:
        assert code == 1, "no shutdown came first: the spec's status is 1"
    await wait_for(lambda: not processes_with(project.marker), 10, "the test command to be gone")
    fields = front_matter(card.read_text())
    assert fields["state"] == "Failed" and fields["reason"] == "interrupted"
    result = project.log_lines(run_id)[-1]
    assert result["type"] == "result" and result["data"]["reason"] == "interrupted"
    assert result["data"]["detail"], "the log says why the run stopped"

    again = await serve(project.root)
    try:
        await again.wait_for(interrupted(card.as_uri()), 30)
        lenses = await again.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        assert "Resume" in [lens["command"]["title"] for lens in lenses]
    finally:
        await again.close()


async def test_shutdown_then_exit_ends_with_status_0(lsp_project: Project) -> None:
    project = lsp_project
    server, card, _, editor = await start_slow_run(project)
    try:
        await server.request("shutdown", None, within=15)
        server.notify("exit", None)
        assert server.proc is not None
        async with asyncio.timeout(EXIT_WITHIN):
            assert await server.proc.wait() == 0
    finally:
        await stop(editor)
        await server.close()
    assert front_matter(card.read_text())["reason"] == "interrupted"


async def test_a_log_without_a_result_reads_as_interrupted_at_the_next_start(
    lsp_project: Project,
) -> None:
    """SIGKILL of the run's worker and of the server: nobody writes a result. The card on
    disk may still say `New` (its `In Work` lived in an unsaved buffer): the log alone tells
    the next server."""
    project = lsp_project
    server, card, run_id, editor = await start_slow_run(project)
    assert server.proc is not None
    marker = project.root / ".cardrunner" / "runs" / f"{run_id}.pid"
    worker = int(json.loads(marker.read_text())["pid"])
    ledger = project.root / ".cardrunner" / "processes" / f"{worker}.jsonl"
    groups = {os.getpgid(pid) for pid in processes_with(project.marker)}  # its sandbox's group
    await wait_for(  # a group is recorded just after it starts: kill the worker after that
        lambda: ledger.exists() and any(f'"pgid": {g},' in ledger.read_text() for g in groups),
        what="the test command in the worker's process ledger",
    )
    os.kill(worker, signal.SIGKILL)
    server.proc.kill()
    await server.proc.wait()
    await stop(editor)
    await server.close()
    assert project.log_lines(run_id)[-1]["type"] != "result"
    card.write_text(card.read_text().replace("state: In Work", "state: New"))

    again = await serve(project.root)
    try:
        found = await again.wait_for(interrupted(card.as_uri()), 30)
        message = next(d for d in found.params["diagnostics"] if d["code"] == "interrupted")
        assert run_id in message["message"]
        lenses = await again.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        assert [lens["command"]["title"] for lens in lenses][:2] == ["▶ Run card", "Resume"]
    finally:
        await again.close()
    await wait_for(lambda: not processes_with(project.marker), 15, "the sweep of the dead run")
