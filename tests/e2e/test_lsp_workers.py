"""Runs execute in worker processes: what crosses the boundary, and what happens when either
side dies; the worker and what its run starts are scheduled as `run_priority` says.

A worker killed with SIGKILL leaves its card interrupted with Resume in the live server; a
language server killed mid-run makes its worker end the run `interrupted` on disk, and the next
server resumes it; cancel and the review cross the pipe; the SDKs stay out of the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from cardrunner.card.card import card_slug
from cardrunner.git.branches import BranchRepo
from cardrunner.processes.groups import autogroup_nice
from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.lsp import (
    ACCEPT,
    GOOD_APP,
    Project,
    command,
    diags,
    editor_of,
    final,
    front_matter,
    git,
    lens_command,
    make_project,
    processes_with,
    project_of,
    tool,
    turn,
    verify_greeting,
    wait_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess


def resumable_transcript() -> list[dict[str, Any]]:
    """Sits in the 30 s test command first (killed there), then fixes, verifies, commits."""
    return [
        turn(tool("run_tests")),
        turn(
            tool("write_file", path="src/app.py", content=GOOD_APP),
            *verify_greeting(),
            tool("git_commit", message="card: again\n\nSay hello with the name."),
        ),
        final(),
    ]


def worker_pids(root: Path) -> list[int]:
    """The processes the live markers name: the runs' workers."""
    pids = []
    for marker in (root / ".cardrunner" / "runs").glob("*.pid"):
        pids.append(int(json.loads(marker.read_text())["pid"]))
    return pids


async def test_a_worker_killed_mid_run_shows_interrupted_and_resume_finishes_it(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("again")
    project.transcript("again", resumable_transcript())
    editor.answers = [ACCEPT]  # the resumed run commits after review
    uri = editor.open(card)
    first = await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")
    [pid] = await wait_for(lambda: worker_pids(project.root), what="the worker's live marker")
    server = await command(client, "cardrunner.debug.modules")
    assert pid != server["pid"]  # the run is not in the server's process
    os.kill(pid, signal.SIGKILL)

    status = await wait_for(
        lambda: (s := editor.last_status(uri)) and s.get("state") == "failed" and s,
        what="the run to end",
    )
    assert status["reason"] == "interrupted"
    said = "failed (interrupted): the run's worker process died (signal SIGKILL)"
    await wait_for(
        lambda: any(d.message.startswith(said) for d in diags(client, uri)),
        what=lambda: f"the result diagnostic: {[d.message for d in diags(client, uri)]}",
    )
    assert front_matter(card.read_text())["state"] == "In Work"  # as the dead worker left it

    resume = await lens_command(client, uri, "Resume")
    resumed = await command(client, resume.command, *(resume.arguments or []))
    assert "runId" in resumed, resumed
    await wait_for(
        lambda: (editor.last_status(uri) or {}).get("state") == "done",
        30,
        lambda: f"the resumed run to end done: {editor.last_status(uri)}",
    )
    assert (editor.last_status(uri) or {})["runId"] == first["runId"]  # the run continued
    assert front_matter(editor.text(uri))["state"] == "Done"
    await wait_for(lambda: not processes_with(project.marker), 10, "the orphaned sleep swept")


SHADOW = """
import pathlib, sys
if "cardrunner.workers.program" in " ".join(sys.orig_argv):
    pathlib.Path(__file__).with_name("shadowed").write_text(" ".join(sys.orig_argv))
raise ImportError("a workspace module shadowed the real yaml")
"""


async def test_modules_in_the_workspace_do_not_shadow_the_workers_imports(
    client: LanguageClient,
) -> None:
    """The worker starts in the workspace, which the model writes: with `python -m` alone its
    folder would come first on `sys.path`, and a `yaml.py` the model left there would run in
    the worker, outside the sandbox, at the next run. `-P` keeps it off the path."""
    project = project_of(client)
    (project.root / "yaml.py").write_text(SHADOW)
    card = project.write_card("again")
    project.transcript("again", resumable_transcript())
    uri = card.as_uri()
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the run's test command")
    assert not (project.root / "shadowed").exists()
    assert (await command(client, "cardrunner.cancelRun", uri))["cancelled"]
    await wait_for(lambda: not processes_with(str(card)), 30, "the worker to exit")
    assert not (project.root / "shadowed").exists()


async def test_cancel_crosses_to_the_worker_and_it_exits(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("again")
    project.transcript("again", resumable_transcript())
    uri = card.as_uri()
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")
    [pid] = await wait_for(lambda: worker_pids(project.root), what="the worker's live marker")

    assert (await command(client, "cardrunner.cancelRun", uri))["cancelled"]
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", what="stop")
    assert editor.last_status(uri)["reason"] == "cancelled"  # type: ignore[index]
    await wait_for(lambda: not processes_with(str(card)), 10, "the worker to exit")
    assert not processes_with(project.marker) and not worker_pids(project.root)
    assert pid not in processes_with("cardrunner.workers.program")
    fields = front_matter(card.read_text())
    assert fields["state"] == "Failed" and fields["reason"] == "cancelled"


async def serve(root: Path, env: dict[str, str] | None = None) -> LspProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], root, {**clean, **(env or {})})
    await server.spawn()
    await server.initialize(root)
    return server


async def run_command(server: LspProcess, name: str, *arguments: Any) -> Any:
    params = {"command": name, "arguments": list(arguments)}
    return await server.request("workspace/executeCommand", params)


async def test_the_language_server_killed_mid_run_leaves_it_interrupted_and_resumable(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{os.getpid()}-killed")
    card = project.write_card("again")
    project.transcript("again", resumable_transcript())
    server = await serve(project.root)
    try:
        await run_command(server, "cardrunner.runCard", card.as_uri())
        await wait_for(lambda: processes_with(project.marker), what="the slow test command")
        assert server.proc is not None
        server.proc.kill()
        await server.proc.wait()
        # The worker sees its pipe close and ends the run itself: nothing is left running,
        # and the card on disk says why it stopped.
        await wait_for(lambda: not processes_with(str(card)), 20, "the worker to end the run")
        assert not processes_with(project.marker)
        fields = front_matter(card.read_text())
        assert fields["state"] == "Failed" and fields["reason"] == "interrupted"
        assert fields["last_run"]["reason"] == "interrupted"
    finally:
        await server.close()

    server = await serve(project.root)
    try:
        item = await server.wait_for(
            lambda r: (
                r.method == "textDocument/publishDiagnostics"
                and r.params["uri"] == card.as_uri()
                and any("interrupted" in d["message"] for d in r.params["diagnostics"])
            ),
            60,
        )
        assert item
        lenses = await server.request(
            "textDocument/codeLens", {"textDocument": {"uri": card.as_uri()}}
        )
        resume = next(lens["command"] for lens in lenses if lens["command"]["title"] == "Resume")
        reviewer = asyncio.create_task(accept_reviews(server, card.as_uri()))
        await run_command(server, resume["command"], *resume["arguments"])
        await wait_for(lambda: front_matter(card.read_text())["state"] == "Done", 60, "done")
        # the card's state is written first, then committed: the history is the commit's
        await wait_for(
            lambda: "Result: done" in git(project.root, "log", "--format=%b"), 60, "card commit"
        )
        reviewer.cancel()
    finally:
        await server.close()
    assert front_matter(card.read_text())["last_run"]["result"] == "done"
    history = await BranchRepo(project.root).card_runs(card_slug(card, project.root))
    assert [(r.result, r.reason) for r in history] == [("done", None), ("failed", "interrupted")]


async def accept_reviews(server: LspProcess, uri: str) -> None:
    """Be the user: accept every review the server asks for."""
    seen = 0
    while True:
        item = await server.wait_for(lambda r: r.method == "cardrunner/reviewRequested", 120, seen)
        seen = server.received.index(item) + 1
        await run_command(server, "cardrunner.acceptChanges", uri)


async def test_a_run_through_the_sdk_reviewed_in_the_editor_leaves_no_sdk_in_the_server(
    tmp_path: Path,
) -> None:
    project: Project = make_project(tmp_path / "ws", f"cardrunner-test-{os.getpid()}-sdk")
    card = project.write_card("greeting")
    steps = [
        turn(tool("write_file", path="src/app.py", content=GOOD_APP)),
        turn(
            *verify_greeting(),
            tool("git_commit", message="card: greeting"),
        ),
        final(),
    ]
    toml = project.root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('replay = "transcripts"\n', ""))
    async with FakeMessagesAPI(steps) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test"}
        server = await serve(project.root, env)
        reviewer = asyncio.create_task(accept_reviews(server, card.as_uri()))
        try:
            await run_command(server, "cardrunner.runCard", card.as_uri())
            await wait_for(lambda: front_matter(card.read_text())["state"] == "Done", 60, "done")
            modules = await run_command(server, "cardrunner.debug.modules")
        finally:
            reviewer.cancel()
            await server.close()
        api.assert_complete()
    assert modules["now"] == {"anthropic": False, "mcp": False}
    assert not {"anthropic", "mcp", "httpx2"} & set(modules["topLevel"])
    assert "card: greeting" in git(project.root, "log", "--format=%s").splitlines()
    assert git(project.root, "show", "HEAD:src/app.py") == GOOD_APP  # accepted across the pipe


BASE_NICE = os.getpriority(os.PRIO_PROCESS, 0)
"""The tests' own nice value, which the server inherits; a worker starts 10 below it."""


@pytest.mark.parametrize(
    ("setting", "nice", "policy"),
    [
        (None, min(BASE_NICE + 10, 19), os.SCHED_OTHER),
        ("lowest", 19, os.SCHED_OTHER),
        ("idle", 19, os.SCHED_IDLE),
    ],
    ids=["default", "lowest", "idle"],
)
async def test_the_run_priority_schedules_the_worker_and_its_test_command(
    tmp_path: Path, setting: str | None, nice: int, policy: int
) -> None:
    """The server pre-starts a spare at the default; the run's own setting, read from its
    `start`, lowers the worker before anything of the run starts, so the test command the
    model runs is born at the same priority. The server itself is never lowered."""
    assert BASE_NICE < 10, "the tests must not run at a nice value that hides the difference"
    project = make_project(tmp_path / "ws", f"cardrunner-test-{os.getpid()}-prio-{setting}")
    if setting is not None:
        toml = project.root / "cardrunner.toml"
        toml.write_text(f"run_priority = {json.dumps(setting)}\n{toml.read_text()}")
    card = project.write_card("again")
    project.transcript("again", resumable_transcript())
    # a SCHED_IDLE run gets no CPU while the machine is busy (the other tests): that is the
    # setting's promise, so it gets the time to reach its test command that idle moments give
    patience = 300.0 if setting == "idle" else 20.0
    server = await serve(project.root)
    try:
        await run_command(server, "cardrunner.runCard", card.as_uri())
        sleepers = await wait_for(
            lambda: processes_with(project.marker), patience, "the test command"
        )
        [worker] = await wait_for(lambda: worker_pids(project.root), patience, "the live marker")
        for pid in [worker, *sleepers]:
            scheduled = (os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid))
            assert scheduled == (nice, policy), (pid, scheduled)
        for pid in sleepers:  # in a session of its own, so its autogroup must rank as low
            assert autogroup_nice(pid) in (None, nice), (pid, autogroup_nice(pid))
        assert server.proc is not None
        own = (
            os.getpriority(os.PRIO_PROCESS, server.proc.pid),
            os.sched_getscheduler(server.proc.pid),
        )
        assert own == (BASE_NICE, os.SCHED_OTHER)
        assert (await run_command(server, "cardrunner.cancelRun", card.as_uri()))["cancelled"]
        await wait_for(lambda: not processes_with(str(card)), patience + 10, "the worker to exit")
    finally:
        await server.close()


async def test_an_unknown_run_priority_is_a_settings_problem(client: LanguageClient) -> None:
    client.set_configuration({"run_priority": "normal"}, section="cardrunner")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    warning = await wait_for(
        lambda: [m for m in client.messages if "invalid settings" in m.message],
        what="the settings warning",
    )
    assert warning[0].type == types.MessageType.Warning
    said = warning[0].message
    assert "run_priority" in said and all(v in said for v in ("'low'", "'lowest'", "'idle'"))
