"""Worker processes as the language server starts them, and the one spare kept warm.

A fresh worker spends ~2 s (more under load) importing the SDK, MCP and the run's models before
its run's first event, while the user who clicked ▶ Run waits. So once a server has started a
run, `SpareWorker` keeps one worker started ahead of need: the same program at the same (lower)
priority, in the workspace root, told by a `warm` message which adapters the settings use
(`wire.WarmUp`), with those imports done, blocked reading its `start` message. The next run
takes it (`take`) and a new spare is started once that run is under way (`refill`).

What it costs, and when it ends:
- **Nothing before the first run**: servers that never run a card start no spare.
- **At most one**, and it expires `idle_seconds` after it was started (an idle editor does not
  hold a 60–120 MiB process forever); the next run starts cold and refills it.
- **It dies with the server**: `close` (the server's wind-down, `RunManager.aclose`) kills it;
  if the server itself is killed, the spare's stdin reaches its end and the worker exits
  without doing anything (`workers/program.py` returns on an empty first line).
- **Never handed to a run when it cannot serve one**: a spare that died on its own (SIGKILL, the
  OOM killer) is dropped when its pipe closes or at `take`; one that is stopped (SIGSTOP) is
  killed at `take` (and one wedged some other way by the run's bounded wait for `started`); one for another root, or started
  under an environment the server has changed since, is discarded (the SDK, the commands and
  the MCP servers read the worker's own `os.environ`, inherited at its start). The one race
  left — a spare that dies between `take` and reading its start — is caught by the run's
  `started` acknowledgement (`workers/handle.py` then starts a fresh worker for it).

`ps` shows a cold worker's card in its argv; a spare has none when it starts, so its argv ends
in `--spare`, and a run it took keeps that: its card is in the run's live marker
(`.cardrunner/runs/<run id>.pid`) and log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cardrunner.processes.offloop import OffLoopProcess, start_off_loop
from cardrunner.workers import wire

log = logging.getLogger(__name__)

LINE_LIMIT = 1 << 26
"""The longest line read from a worker (a round's content or a review's diff can be long)."""
WORKER = (sys.executable, "-P", "-m", "cardrunner.workers.program")
"""`-P`: the worker starts in the workspace, which the model writes; plain `-m` would put that
folder first on `sys.path`, so a `yaml.py` left there would run in the worker, unconfined."""
SPARE_ARG = "--spare"
"""The argv entry `ps` shows for a worker started as a spare (it has no card yet)."""
IDLE_SECONDS = 600.0
"""How long a spare waits for a run before it is ended (it holds the SDK's memory)."""
KILL_WAIT_SECONDS = 2.0
"""How long `close` waits for a killed spare to be reaped."""


async def spawn_worker(root: Path, label: str) -> OffLoopProcess:
    """A worker process in `root`; `label` is the argv entry `ps` shows (card or `--spare`).
    Started on a thread: a start on the server's loop would pause every request
    (`processes/offloop.py`)."""
    return await start_off_loop([*WORKER, label], root, limit=LINE_LIMIT)


@dataclass
class _Spare:
    """One spare process and what it was started for."""

    proc: OffLoopProcess
    root: Path
    environ: dict[str, str]
    warm: wire.WarmUp
    watcher: asyncio.Task[None] | None = None
    ready: bool = False
    gone: bool = False
    """Its pipe closed before it was taken: it died, and must not be handed a run."""


class SpareWorker:
    """At most one warm worker, for the next run; all of it runs on the caller's loop."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._spare: _Spare | None = None
        self._starting: asyncio.Task[None] | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._closed = False
        self._reaping: set[asyncio.Task[None]] = set()

    @property
    def pid(self) -> int | None:
        """The spare's process (None when there is none)."""
        spare = self._spare
        return spare.proc.pid if spare is not None and not spare.gone else None

    def describe(self) -> dict[str, object] | None:
        """For the debug command: the spare's pid and whether its imports are done."""
        spare = self._spare
        if spare is None or spare.gone:
            return None
        return {"pid": spare.proc.pid, "ready": spare.ready, "warm": spare.warm.model_dump()}

    def refill(self, root: Path, warm: wire.WarmUp) -> None:
        """Start a spare in the background unless one is there or on its way (cheap when so:
        the manager calls it once per run)."""
        if self._closed or self._starting is not None:
            return
        if self._spare is not None and not self._spare.gone:
            return
        self._discard()
        self._starting = asyncio.create_task(self._start(root, warm), name="spare worker")

    async def take(self, root: Path) -> OffLoopProcess | None:
        """The spare for a run in `root`, its stdout now the caller's; None when there is none
        that can serve it (the caller starts a worker of its own, and `refill`s later)."""
        if self._starting is not None:  # being spawned right now: a fresh worker is as quick
            return None
        spare, self._spare = self._spare, None
        self._cancel_expiry()
        if spare is None:
            return None
        if spare.watcher is not None:  # its stdout must have one reader: the run's
            spare.watcher.cancel()
            await asyncio.gather(spare.watcher, return_exceptions=True)
        usable = (
            not spare.gone
            and spare.proc.returncode is None
            and not stopped(spare.proc.pid)
            and spare.root == root
            and spare.environ == dict(os.environ)
        )
        if not usable:
            await _end(spare.proc)
            return None
        return spare.proc

    async def close(self) -> None:
        """No spare from now on; the one there (or on its way) is killed."""
        self._closed = True
        self._cancel_expiry()
        if self._starting is not None:
            await asyncio.gather(self._starting, return_exceptions=True)
        self._discard()
        if self._reaping:
            await asyncio.wait(list(self._reaping))

    async def _start(self, root: Path, warm: wire.WarmUp) -> None:
        try:
            proc = await spawn_worker(root, SPARE_ARG)
        except Exception:  # no interpreter, no fork: runs start cold, as before
            log.exception("a spare worker could not start")
            return
        finally:
            self._starting = None
        spare = _Spare(proc, root, dict(os.environ), warm)
        if self._closed:
            await _end(proc)
            return
        assert proc.stdin is not None
        proc.stdin.write(wire.line(warm.model_dump(mode="json")))
        self._spare = spare
        spare.watcher = asyncio.create_task(self._watch(spare), name="spare watcher")
        loop = asyncio.get_running_loop()
        self._expiry = loop.call_later(self.idle_seconds, self._expired)

    async def _watch(self, spare: _Spare) -> None:
        """Note when the spare is ready; drop it if its pipe closes (it died)."""
        assert spare.proc.stdout is not None
        while line := await spare.proc.stdout.readline():
            with contextlib.suppress(ValueError):
                if json.loads(line).get("kind") == "ready":
                    spare.ready = True
        spare.gone = True
        await spare.proc.wait()
        log.warning("the spare worker ended on its own (exit status %s)", spare.proc.returncode)

    def _expired(self) -> None:
        self._expiry = None
        log.info("the spare worker was idle for %.0f s: ended", self.idle_seconds)
        self._discard()

    def _cancel_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def _discard(self) -> None:
        """Kill the spare (if any) now; its reaping goes on in the background."""
        spare, self._spare = self._spare, None
        if spare is None:
            return
        if spare.watcher is not None:
            spare.watcher.cancel()
        _kill(spare.proc)
        task = asyncio.create_task(_reap(spare.proc))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)


def stopped(pid: int) -> bool:
    """True when `pid` is stopped (SIGSTOP, a debugger): it would take a run and never play it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def _kill(proc: OffLoopProcess) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def _reap(proc: OffLoopProcess) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_WAIT_SECONDS):
            await proc.wait()


async def _end(proc: OffLoopProcess) -> None:
    _kill(proc)
    await _reap(proc)
