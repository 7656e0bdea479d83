"""The warm spare worker (`workers/spare.py`): the second run starts in a process already warm.

A server that has run no card holds no spare; after its first run it keeps one, which the next
run takes (the run's live marker names the spare's pid) and which is replaced right after; a
spare killed before use is never handed a run; and the spare ends with the server, however the
server ends. The spare's pid comes from `cardrunner.debug.modules` (docs/lsp-extensions.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from cardrunner.processes.groups import process_alive
from tests.support.lsp import (
    Editor,
    Project,
    command,
    editor_of,
    make_project,
    processes_with,
    project_of,
    slow_transcript,
    wait_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess


def run_pid(project: Project, run_id: str) -> int | None:
    """The process the run executes in, as its live marker says."""
    marker = project.root / ".cardrunner" / "runs" / f"{run_id}.pid"
    try:
        return int(json.loads(marker.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


async def spare_of(client: LanguageClient) -> dict[str, Any] | None:
    spare: dict[str, Any] | None = (await command(client, "cardrunner.debug.modules"))["spare"]
    return spare


async def poll_spare(
    ask: Callable[[], Awaitable[dict[str, Any] | None]], other_than: int | None, within: float
) -> int:
    """Ask until the server holds a spare whose imports are done (and that is not
    `other_than`); its pid. Fails after `within` seconds."""
    deadline = time.monotonic() + within
    seen = None
    while time.monotonic() < deadline:
        seen = await ask()
        if seen is not None and seen["ready"] and seen["pid"] != other_than:
            assert process_alive(seen["pid"])
            return int(seen["pid"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"no ready spare within {within} s: {seen}")


async def ready_spare(client: LanguageClient, other_than: int | None = None) -> int:
    return await poll_spare(lambda: spare_of(client), other_than, 60)


def ended(editor: Editor, uri: str) -> dict[str, Any] | None:
    """The run's last status once it has failed (as a cancelled run does)."""
    status = editor.last_status(uri)
    return status if status is not None and status.get("state") == "failed" else None


async def start_two_cards(client: LanguageClient) -> tuple[str, str]:
    project = project_of(client)
    first, second = project.write_card("first"), project.write_card("second")
    for name in ("first", "second"):
        project.transcript(name, slow_transcript())
    return first.as_uri(), second.as_uri()


async def test_no_spare_before_the_first_run_then_the_next_run_takes_it(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    first, second = await start_two_cards(client)
    assert await spare_of(client) is None
    one = await command(client, "cardrunner.runCard", first)
    assert await spare_of(client) is None  # the run starts cold; the spare follows it
    await wait_for(lambda: processes_with(project.marker), what="the first run's test command")
    spare = await ready_spare(client)
    assert spare != run_pid(project, one["runId"])

    two = await command(client, "cardrunner.runCard", second)
    pid = await wait_for(lambda: run_pid(project, two["runId"]), what="the second run's marker")
    assert pid == spare  # the second run executes in the process that was the spare
    await wait_for(lambda: len(processes_with(project.marker)) == 2, what="its test command")
    assert await ready_spare(client, other_than=spare) != spare  # and a new spare stands by

    for uri in (first, second):
        assert (await command(client, "cardrunner.cancelRun", uri))["cancelled"]
        status = await wait_for(partial(ended, editor, uri), what=f"{uri} to end")
        assert status["reason"] == "cancelled"
    await wait_for(lambda: not process_alive(spare), what="the taken spare to exit with its run")


async def test_a_spare_killed_before_use_is_replaced_and_the_run_still_works(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    first, second = await start_two_cards(client)
    await command(client, "cardrunner.runCard", first)
    spare = await ready_spare(client)
    os.kill(spare, signal.SIGKILL)
    # At once, before the server may have noticed: the run must not land in the dead process.
    two = await command(client, "cardrunner.runCard", second)
    pid = await wait_for(lambda: run_pid(project, two["runId"]), what="the second run's marker")
    assert pid != spare and process_alive(pid)
    await wait_for(lambda: len(processes_with(project.marker)) == 2, 30, "its test command")
    assert (editor.last_status(second) or {}).get("state") == "running"
    await ready_spare(client, other_than=spare)  # a fresh spare replaces the dead one

    assert (await command(client, "cardrunner.cancelRun", second))["cancelled"]
    status = await wait_for(partial(ended, editor, second), what="the second run to end")
    assert status["reason"] == "cancelled"  # not a dead worker
    assert (await command(client, "cardrunner.cancelRun", first))["cancelled"]


async def test_a_stopped_spare_is_killed_and_replaced_and_the_run_still_works(
    client: LanguageClient,
) -> None:
    """A SIGSTOPped spare would take the run and sit at round 0 for ever."""
    project, editor = project_of(client), editor_of(client)
    first, second = await start_two_cards(client)
    await command(client, "cardrunner.runCard", first)
    spare = await ready_spare(client)
    os.kill(spare, signal.SIGSTOP)
    try:
        two = await command(client, "cardrunner.runCard", second)
        pid = await wait_for(lambda: run_pid(project, two["runId"]), 30, "the second run's marker")
        assert pid != spare and process_alive(pid)
        await wait_for(lambda: len(processes_with(project.marker)) == 2, 30, "its test command")
        await wait_for(lambda: not process_alive(spare), 10, "the stopped spare to be killed")
        await ready_spare(client, other_than=spare)  # and replaced
    finally:
        if process_alive(spare):
            os.kill(spare, signal.SIGKILL)
    for uri in (first, second):
        assert (await command(client, "cardrunner.cancelRun", uri))["cancelled"]
        assert (await wait_for(partial(ended, editor, uri), what="the run to end"))["reason"] == (
            "cancelled"
        )


async def test_cancel_ends_a_run_whose_worker_is_stopped_and_the_card_runs_again(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    first, _ = await start_two_cards(client)
    one = await command(client, "cardrunner.runCard", first)
    pid = await wait_for(lambda: run_pid(project, one["runId"]), what="the run's marker")
    await wait_for(lambda: processes_with(project.marker), what="its test command")
    os.kill(pid, signal.SIGSTOP)  # a wedged worker: it reads nothing, not even the cancel
    try:
        assert (await command(client, "cardrunner.cancelRun", first))["cancelled"]
        status = await wait_for(partial(ended, editor, first), 60, "the wedged run to end")
        assert status["reason"] == "interrupted", status  # killed: its own cleanup never ran
        assert not process_alive(pid)
    finally:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
    again = await command(client, "cardrunner.runCard", first)  # not "already running"
    assert again["runId"] != one["runId"]
    await wait_for(lambda: run_pid(project, again["runId"]), 30, "the new run's marker")
    assert (editor.last_status(first) or {}).get("state") == "running"
    assert not any("already running" in m.message for m in client.messages)
    assert (await command(client, "cardrunner.cancelRun", first))["cancelled"]
    # Within the server's own bound (it kills a worker at CANCEL_SECONDS), not a tighter one:
    # on a loaded machine this run's cleanup follows the killed worker's, and CI once saw 20 s.
    status = await wait_for(partial(ended, editor, first), 60, "the new run to end")
    assert status["reason"] == "cancelled", status  # a healthy worker: its own cleanup ran


async def serve(root: Path) -> LspProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], root, clean)
    await server.spawn()
    await server.initialize(root)
    return server


async def debug_spare(server: LspProcess) -> dict[str, Any] | None:
    params = {"command": "cardrunner.debug.modules", "arguments": []}
    spare: dict[str, Any] | None = (await server.request("workspace/executeCommand", params))[
        "spare"
    ]
    return spare


@pytest.mark.parametrize("ending", ["SIGKILL", "exit", "end of input"])
async def test_the_spare_ends_with_the_server(tmp_path: Path, ending: str) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{os.getpid()}-spare-{ending[:4]}")
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    server = await serve(project.root)
    try:
        params = {"command": "cardrunner.runCard", "arguments": [card.as_uri()]}
        await server.request("workspace/executeCommand", params)
        await wait_for(lambda: processes_with(project.marker), what="the run's test command")
        pid = await poll_spare(lambda: debug_spare(server), None, 60)
        proc = server.proc
        assert proc is not None and proc.stdin is not None
        if ending == "SIGKILL":
            proc.kill()
        elif ending == "exit":
            server.notify("exit", None)
        else:
            proc.stdin.close()
        await proc.wait()
        await wait_for(lambda: not process_alive(pid), 20, f"the spare to end after {ending}")
        await wait_for(lambda: not processes_with(project.marker), 20, "the run to end")
    finally:
        await server.close()
