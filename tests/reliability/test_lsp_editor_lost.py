"""Losing the editor mid-run, many times over: nothing of the server's session outlives it.

An editor can leave a language server in the middle of a run by saying `exit` without
`shutdown`, by closing the server's stdin and stdout (killed, crashed, `:qa!`), or the server can
be killed outright (SIGKILL: nobody winds anything down). Whichever it is, once the server is
gone no process of its session may be left — not the run's worker, not the spare worker, not a
command the run started — and the card must end `Failed` / `interrupted`, with a result in its
log, ready to be resumed. The ends race (the server's bounded wind-down, the worker noticing
that the server is gone, the end of its run), so each way is tried `REPEATS` times.

The server is driven by a raw JSON-RPC client (bench/_lsp.py), so the test owns its pipes. The
run is the cheapest one with a worker mid-run: a replayed transcript that starts the app and
then sits in its test command; the test leaves once that command runs, never after a guessed
sleep. The app takes its time to stop (it ignores SIGTERM, as a dev server finishing its
requests does), so ending the run outlasts the server's wind-down (`WIND_DOWN_SECONDS`) on any
machine — what a loaded machine does to any run — and the server is gone while its worker
is still ending the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.run.liveness import CardBusy, CardLock, live_cards
from cardrunner.run.resume import find_resumable, rebuild
from tests.support.lsp import (
    Project,
    final,
    front_matter,
    git,
    make_project,
    processes_with,
    tool,
    turn,
    wait_for,
)
from tests.support.processes import alive, children

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess, Received

REPEATS = 8
"""Tries of each way: a race lost three times in ten shows in one of eight tries with a
chance of 1 − 0.7⁸ ≈ 94 %."""
WAYS = ["exit without shutdown", "stdin and stdout closed", "SIGKILL"]
TAG = "CARDRUNNER_TEST_SESSION"
"""An environment variable only this test's server has: its workers and spare inherit it."""
GONE_WITHIN = 30.0
"""Seconds for every process of the session to end (about three when nothing is wrong: the
app's grace period, and a worktree removed; the machine is shared)."""


APP = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('listening', flush=True); time.sleep(120)"
)
"""The app: up at once, and deaf to SIGTERM (it is killed after the runner's grace period)."""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    marker = f"cardrunner-test-{uuid.uuid4().hex[:12]}"
    project = make_project(tmp_path / "ws", marker)
    toml = project.root / "cardrunner.toml"
    app = json.dumps(["python", "-c", APP, f"app-{marker[::-1]}"])  # the test's marker matches
    text = toml.read_text().replace("\ntest = ", f"\napp = {app}\ntest = ")  # only it
    toml.write_text(text + '\n[sandbox]\nmode = "off"\n')  # bwrap would end the app at once
    git(project.root, "commit", "-qam", "an app slow to stop")
    yield project
    for pid in processes_with(marker) + processes_with(app_marker(project)):  # a failed try's
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def app_marker(project: Project) -> str:
    return f"app-{project.marker[::-1]}"


def _environ_has(pid: str, tag: bytes) -> bool:
    try:
        return tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def session_processes(tag: str, markers: list[str], groups: set[int]) -> dict[int, str]:
    """Live processes of one server's session, with their command lines: those that inherited
    its `tag` as `TAG` (the server, workers, the spare), the run's commands (`markers`: its
    tests, its app), and every process in a group a worker recorded in its ledger (`groups`)."""
    wanted = f"{TAG}={tag}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] == "Z":  # it has exited, and only waits to be reaped
            continue
        ours = any(m in cmdline for m in markers) or int(fields[2]) in groups
        if ours or _environ_has(entry.name, wanted):
            found[int(entry.name)] = cmdline.strip()
    return found


def spare_of(server: int) -> list[int]:
    """The server's spare worker (its argv ends in `--spare`), if it has one now."""
    found = []
    for pid in children(server):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().endswith(b"\0--spare\0"):
                found.append(pid)
    return found


def ledger_groups(root: Path) -> set[int]:
    """Every process group the run's workers recorded (the sweep's ledgers)."""
    groups: set[int] = set()
    for ledger in (root / ".cardrunner" / "processes").glob("*.jsonl"):
        with contextlib.suppress(OSError):
            for line in ledger.read_text().splitlines():
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    groups.add(int(json.loads(line)["pgid"]))
    return groups


async def start_run(project: Project, tag: str) -> tuple[LspProcess, Path, str]:
    """A server running a card that has started the app and sits in its test command (a
    worker mid-run)."""
    card = project.write_card("slow")
    steps = [turn(tool("start_app")), turn(tool("run_tests")), final("RESULT: failed: slow")]
    project.transcript("slow", steps)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env[TAG] = tag
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=project.root, env=env)
    await server.spawn()
    await server.initialize(project.root)
    result = await server.request(
        "workspace/executeCommand",
        {"command": "cardrunner.runCard", "arguments": [card.as_uri()]},
    )
    run_id = str(result["runId"])

    def what() -> str:
        log = project.root / ".cardrunner" / "runs" / f"{run_id}.jsonl"
        tail = log.read_text()[-2000:] if log.exists() else "(no log)"
        return f"the run's test command; the card:\n{card.read_text()}\nthe log ends:\n{tail}"

    await wait_for(lambda: processes_with(project.marker), 60, what)
    return server, card, run_id


async def leave(how: str, server: LspProcess) -> None:
    proc = server.proc
    assert proc is not None and proc.stdin is not None
    if how == "exit without shutdown":
        server.notify("exit", None)
    elif how == "stdin and stdout closed":
        proc.stdin.close()
        out = proc._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
        if out is not None:
            out.close()
    else:
        proc.send_signal(signal.SIGKILL)


async def wait_all_gone(project: Project, tag: str, groups: set[int]) -> dict[int, str]:
    """Poll until no process of the session lives; what is left after `GONE_WITHIN` s.
    Groups a worker records meanwhile count too (a ledger is removed once its groups end), and
    a process once seen is followed by its pid (an exiting one no longer shows its environment).
    """
    markers = [project.marker, app_marker(project)]
    deadline = time.monotonic() + GONE_WITHIN
    seen: dict[int, str] = {}
    while True:
        groups |= ledger_groups(project.root)
        seen |= session_processes(tag, markers, groups)
        left = {pid: argv for pid, argv in seen.items() if alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("attempt", range(REPEATS))
@pytest.mark.parametrize("how", WAYS)
async def test_losing_the_editor_mid_run_leaves_no_process_and_a_resumable_card(
    project: Project, how: str, attempt: int
) -> None:
    tag = uuid.uuid4().hex
    server, card, run_id = await start_run(project, tag)
    assert server.proc is not None
    try:
        pid = server.proc.pid
        await wait_for(lambda: processes_with(app_marker(project)), 30, "the app")
        await wait_for(lambda: spare_of(pid), 30, "the spare worker for the next run")
        groups = ledger_groups(project.root)
        await leave(how, server)
        async with asyncio.timeout(GONE_WITHIN):
            code = await server.proc.wait()
        if how != "SIGKILL":
            assert code == 1, "no shutdown came first: the spec's status is 1"
        left = await wait_all_gone(project, tag, groups)
    finally:
        if server.proc.returncode is None:
            server.proc.kill()
            await server.proc.wait()
        if server._reader is not None:
            server._reader.cancel()
    text = card.read_text()
    for pid in left:  # never leave them to the next test
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"left running after the server ended ({how}): {left}\ncard:\n{text}"

    fields = front_matter(text)
    assert (fields["state"], fields.get("reason")) == ("Failed", "interrupted"), text
    assert fields["last_run"]["id"] == run_id
    result = project.log_lines(run_id)[-1]
    assert result["type"] == "result", "the log says how the run ended"
    assert result["data"]["reason"] == "interrupted" and result["data"]["detail"]
    # resumable: nothing holds the card, and its log is the one a Resume continues from
    assert run_id not in live_cards(project.root).values()
    try:
        CardLock.acquire(project.root, card).release()
    except CardBusy as exc:
        pytest.fail(f"the card is still held: {exc}")
    log = find_resumable(project.root, card)
    assert log is not None and log.stem == run_id
    assert rebuild(log).rounds >= 1, "the round in flight is in the log to resume from"
    if attempt == 0:  # as an editor sees it: the next server offers Resume
        await offers_resume(project, card)


async def offers_resume(project: Project, card: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    again = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=project.root, env=env)
    await again.spawn()
    try:
        await again.initialize(project.root)
        uri = card.as_uri()

        def interrupted(r: Received) -> bool:
            return (
                r.method == "textDocument/publishDiagnostics"
                and r.params["uri"] == uri
                and any(d.get("code") == "interrupted" for d in r.params["diagnostics"])
            )

        await again.wait_for(interrupted, 30)
        lenses = await again.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        assert "Resume" in [lens["command"]["title"] for lens in lenses]
    finally:
        await again.close()
