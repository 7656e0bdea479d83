"""A run in a worker process, seen from the process that schedules it (the language server).

`WorkerRun.play` takes the warm spare (`workers/spare.py`) or starts `python -m
cardrunner.workers.program`, sends it the run's options and turns its lines back into the run's
events (`workers/wire.py`); the worker's `review`, `update_card` and `trust` requests are answered
by this side's approver, card store and trust asker — the editor's. Cancelling sends a message (the run ends
`cancelled`, or `interrupted` with a reason); a worker that no longer reads is sent SIGTERM.

A spare whose pipe closes before it said `started` never began the run (it died while it
waited): the run is started again in a fresh worker, so a dead spare is never a failed run.
Every wait on a worker is bounded: one that does not say `started` in time (a spare stopped
with SIGSTOP, a machine so loaded that nothing runs) is killed — it had begun nothing — and the
run goes to a fresh worker, or ends `interrupted` saying so. A Cancel before `started` kills
the worker at once and ends the run `cancelled` (nothing of it ran); a Cancel after it is sent
to the worker, which is killed if it has not ended `CANCEL_SECONDS` later. Either way the run
ends, and with it the worker's hold on the card: the next run of the card is not refused.

A worker that dies without its `RunFinished` (SIGKILL, the OOM killer, a crash of the
interpreter) leaves what a killed CLI run leaves: the card `In Work`, a log without a result, a
stale live marker, its process groups in the ledger. That is the cross-process contract for an
interrupted run, so nothing is written here; the run's view is told `interrupted`, and a Resume
continues from the log (its sweep stops what the dead worker left running).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from cardrunner.agent import events as ev
from cardrunner.processes.offloop import OffLoopProcess
from cardrunner.run.options import RunOptions
from cardrunner.workers import wire
from cardrunner.workers.spare import spawn_worker

__all__ = ["WorkerRun", "start_message"]

log = logging.getLogger(__name__)

REAP_SECONDS = 10.0
"""How long a worker that sent its `RunFinished` may take to exit before it is killed."""
SPARE_STARTED_SECONDS = 10.0
"""How long a warm spare may take to say `started` (it has its imports done: well under one)."""
STARTED_SECONDS = 60.0
"""How long a fresh worker may take to say `started` (imports on a loaded machine)."""
CANCEL_SECONDS = 30.0
"""How long a cancelled run's worker may take to end the run before it is killed."""

Take = Callable[[Path], Awaitable[OffLoopProcess | None]]
"""Hands over a warm worker for a run in this root, or None (`SpareWorker.take`)."""


def _kill(proc: OffLoopProcess) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def _no_spare(root: Path) -> OffLoopProcess | None:
    return None


def start_message(options: RunOptions) -> bytes:
    o = options
    return wire.line(
        wire.StartRun(
            root=str(o.root),
            card_path=str(o.card_path),
            settings=o.settings.dump(),
            run_id=o.run_id,
            resume_rounds=o.resume.rounds if o.resume is not None else None,
            resume_cost_usd=o.resume.cost_usd if o.resume is not None else 0.0,
            env=dict(o.env),
        ).model_dump(mode="json")
    )


class WorkerRun:
    """One run in one worker process; `on_event` gets each event, on the caller's loop."""

    def __init__(
        self, options: RunOptions, on_event: Callable[[ev.Event], None], take: Take = _no_spare
    ) -> None:
        self._options = options
        self._on_event = on_event
        self._take = take
        self._proc: OffLoopProcess | None = None
        self._cancel: tuple[str | None] | None = None
        self._begun = False
        """The worker said `started`: a cancel goes to it (before, it waits for that)."""
        self._answering: set[asyncio.Task[None]] = set()
        self._last_round: ev.RoundFinished | None = None
        self._finished = False
        self._reaper: asyncio.Task[None] | None = None
        self._killer: asyncio.TimerHandle | None = None
        self._overdue = False
        """Killed because it did not end a cancelled run in time."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def play(self) -> None:
        """Start the worker and follow it to its end (the run's `RunFinished`, or its death)."""
        proc = await self._begin()
        if proc is None:
            return
        assert proc.stdout is not None
        self._begun = True
        if self._cancel is not None:
            self.cancel(*self._cancel)
        try:
            while not self._finished and (line := await proc.stdout.readline()):
                self._received(line)
                await asyncio.sleep(0)  # one event a turn: a request that came meanwhile is
                # answered after this event, not after all the lines the pipe had buffered
        finally:
            for task in self._answering:
                task.cancel()
        if self._finished:  # the card is written by now: the run is over, the process ends
            if self._killer is not None:
                self._killer.cancel()
            self._reaper = asyncio.create_task(self._reap(proc))
        else:
            self._died(await proc.wait())

    async def _begin(self) -> OffLoopProcess | None:
        """A worker that has begun the run (the spare, else a fresh one); None when none did,
        and then the run's `RunFinished` has been told."""
        proc = await self._take(self._options.root)
        if proc is not None and self._cancel is not None:  # cancelled while it was taken
            _kill(proc)
        if proc is not None and await self._hand_over(proc, SPARE_STARTED_SECONDS):
            return proc
        if self._cancel is None:
            # the card's path is only for `ps`: which card this process runs
            proc = await spawn_worker(self._options.root, str(self._options.card_path))
            if await self._hand_over(proc, STARTED_SECONDS):
                return proc
        if self._cancel is not None:
            (why,) = self._cancel
            detail = why or "the run was cancelled before it started"
            self._end_unbegun("interrupted" if why else "cancelled", detail)
        else:
            assert proc is not None and proc.returncode is not None  # the fresh one, ended
            self._died(proc.returncode)
        return None

    async def _hand_over(self, proc: OffLoopProcess, seconds: float) -> bool:
        """Send the run's `start` and wait up to `seconds` for the worker's `started`; False if
        its pipe closed first (a spare that died before it could begin the run, a worker that
        could not start) or it did not answer in time (then it is killed: it began nothing)."""
        self._proc = proc
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(seconds):
                await self._write(start_message(self._options))
                while line := await proc.stdout.readline():
                    with contextlib.suppress(ValueError):
                        if json.loads(line).get("kind") == "started":
                            return True
        except TimeoutError:
            log.warning("a worker did not begin its run within %.0f s: killed", seconds)
            _kill(proc)
        await proc.wait()
        log.warning("a worker died before its run began (exit status %s)", proc.returncode)
        return False

    def _end_unbegun(self, reason: Literal["cancelled", "interrupted"], detail: str) -> None:
        self._finished = True
        self._on_event(
            ev.RunFinished(
                status="failed",
                reason=reason,
                detail=detail,
                rounds=0,
                tool_calls=0,
                usage=ev.Usage(),
                cost_usd=0.0,
            )
        )

    async def exited(self) -> None:
        """Wait until the worker's process is gone (after its `RunFinished`, it still exits)."""
        if self._reaper is not None:
            await asyncio.gather(self._reaper, return_exceptions=True)

    @staticmethod
    async def _reap(proc: OffLoopProcess) -> None:
        """Let a worker that has said its last exit on its own; kill one that hangs."""
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            async with asyncio.timeout(REAP_SECONDS):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    def cancel(self, why: str | None) -> None:
        """End the run: `cancelled`, or `interrupted` when `why` says why it had to stop."""
        proc = self._proc
        if proc is None or not self._begun:  # the run has not begun: no worker will begin it
            self._cancel = (why,)
            if proc is not None:
                _kill(proc)
            return
        if proc.returncode is not None:
            return
        if self._killer is None:  # a worker that cannot end the run (stopped, wedged) is ended
            loop = asyncio.get_running_loop()
            self._killer = loop.call_later(CANCEL_SECONDS, self._cancel_overdue, proc)
        message = wire.line({"kind": "cancel", "why": why})
        if proc.stdin is None or proc.stdin.is_closing():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            return
        proc.stdin.write(message)

    def _cancel_overdue(self, proc: OffLoopProcess) -> None:
        if not self._finished and proc.returncode is None:
            log.warning("a cancelled run's worker did not end in %.0f s: killed", CANCEL_SECONDS)
            self._overdue = True
            _kill(proc)

    def _received(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("a run's worker wrote a line that is not JSON: %.200r", line)
            return
        kind = message.get("kind")
        if kind == "event":
            event = wire.decode_event(message)
            if isinstance(event, ev.RoundFinished):
                self._last_round = event
            self._finished = self._finished or isinstance(event, ev.RunFinished)
            self._on_event(event)
        elif kind == "request":
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

    async def _answer(self, message: dict[str, Any]) -> None:
        """Answer one request with this side's approver, card store or trust asker."""
        reply: dict[str, Any] = {"kind": "response", "id": message.get("id")}
        try:
            if message.get("method") == "review":
                request = wire.decode_review(message["request"])
                decision = await self._options.approver.review(request)
                reply["result"] = wire.encode_decision(decision)
            elif message.get("method") == "update_card":
                path, change = wire.decode_update(message)
                await self._options.card_store.update(path, change)
                reply["result"] = True
            elif message.get("method") == "trust":
                asker, question = self._options.trust, wire.decode_question(message["question"])
                reply["result"] = asker is not None and await asker.ask(question)
            else:
                reply["error"] = f"unknown request {message.get('method')!r}"
        except Exception as exc:
            reply["error"] = f"{type(exc).__name__}: {exc}"
        await self._write(wire.line(reply))

    async def _write(self, data: bytes) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing():
            return
        with contextlib.suppress(ConnectionError, OSError):
            proc.stdin.write(data)
            await proc.stdin.drain()

    def _died(self, code: int) -> None:
        """The worker ended without a result: the run was interrupted, and can be resumed."""
        how = f"exit status {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                how = f"signal {signal.Signals(-code).name}"
        last = self._last_round
        self._finished = True
        if self._killer is not None:
            self._killer.cancel()
        detail = f"the run's worker process died ({how}); resume it to continue"
        if self._overdue:
            detail = (
                f"the run's worker did not end the cancelled run within {CANCEL_SECONDS:.0f} s "
                "and was killed; resume it to continue"
            )
        self._on_event(
            ev.RunFinished(
                status="failed",
                reason="interrupted",
                detail=detail,
                rounds=last.round if last else 0,
                tool_calls=0,
                usage=last.total_usage if last else ev.Usage(),
                cost_usd=last.total_cost_usd if last else 0.0,
            )
        )
