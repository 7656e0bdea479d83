"""A run in a worker process, seen from the process that schedules it (the language server).

`WorkerRun.play` takes the warm spare (`workers/spare.py`) or starts `python -m
cardrunner.workers.program`, sends it the run's options and turns its lines back into the run's
events (`workers/wire.py`); the worker's `review`, `update_card` and `trust` requests are answered
by this side's approver, card store and trust asker — the editor's. Cancelling sends a message (the run ends
`cancelled`, or `interrupted` with a reason); a worker that no longer reads is sent SIGTERM.

A spare whose pipe closes before it said `started` never began the run (it died while it
waited): the run is started again in a fresh worker, so a dead spare is never a failed run.

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
from typing import Any

from cardrunner.agent import events as ev
from cardrunner.run.options import RunOptions
from cardrunner.workers import wire
from cardrunner.workers.spare import spawn_worker

__all__ = ["WorkerRun", "start_message"]

log = logging.getLogger(__name__)

REAP_SECONDS = 10.0
"""How long a worker that sent its `RunFinished` may take to exit before it is killed."""

Take = Callable[[Path], Awaitable[asyncio.subprocess.Process | None]]
"""Hands over a warm worker for a run in this root, or None (`SpareWorker.take`)."""


async def _no_spare(root: Path) -> asyncio.subprocess.Process | None:
    return None


def start_message(options: RunOptions) -> bytes:
    o = options
    return wire.line(
        wire.StartRun(
            root=str(o.root),
            card_path=str(o.card_path),
            settings=o.settings.model_dump(mode="json"),
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
        self._proc: asyncio.subprocess.Process | None = None
        self._cancel: tuple[str | None] | None = None
        self._begun = False
        """The worker said `started`: a cancel goes to it (before, it waits for that)."""
        self._answering: set[asyncio.Task[None]] = set()
        self._last_round: ev.RoundFinished | None = None
        self._finished = False
        self._reaper: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def play(self) -> None:
        """Start the worker and follow it to its end (the run's `RunFinished`, or its death)."""
        proc = await self._take(self._options.root)
        if proc is None or not await self._hand_over(proc):
            # the card's path is only for `ps`: which card this process runs
            proc = await spawn_worker(self._options.root, str(self._options.card_path))
            await self._hand_over(proc)
        assert proc.stdout is not None
        self._begun = True
        if self._cancel is not None:
            self.cancel(*self._cancel)
        try:
            while not self._finished and (line := await proc.stdout.readline()):
                self._received(line)
        finally:
            for task in self._answering:
                task.cancel()
        if self._finished:  # the card is written by now: the run is over, the process ends
            self._reaper = asyncio.create_task(self._reap(proc))
        else:
            self._died(await proc.wait())

    async def _hand_over(self, proc: asyncio.subprocess.Process) -> bool:
        """Send the run's `start` and wait for the worker's `started`; False if its pipe closed
        first (a spare that died before it could begin the run, or a worker that could not start)."""
        self._proc = proc
        assert proc.stdout is not None
        await self._write(start_message(self._options))
        while line := await proc.stdout.readline():
            with contextlib.suppress(ValueError):
                if json.loads(line).get("kind") == "started":
                    return True
        await proc.wait()
        log.warning("a worker died before its run began (exit status %s)", proc.returncode)
        return False

    async def exited(self) -> None:
        """Wait until the worker's process is gone (after its `RunFinished`, it still exits)."""
        if self._reaper is not None:
            await asyncio.gather(self._reaper, return_exceptions=True)

    @staticmethod
    async def _reap(proc: asyncio.subprocess.Process) -> None:
        """Let a worker that has said its last exit on its own; kill one that hangs."""
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), REAP_SECONDS)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    def cancel(self, why: str | None) -> None:
        """End the run: `cancelled`, or `interrupted` when `why` says why it had to stop."""
        proc = self._proc
        if proc is None or not self._begun:  # not started yet: sent once the run has begun
            self._cancel = (why,)
            return
        if proc.returncode is not None:
            return
        message = wire.line({"kind": "cancel", "why": why})
        if proc.stdin is None or proc.stdin.is_closing():
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            return
        proc.stdin.write(message)

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
        self._on_event(
            ev.RunFinished(
                status="failed",
                reason="interrupted",
                detail=f"the run's worker process died ({how}); resume it to continue",
                rounds=last.round if last else 0,
                tool_calls=0,
                usage=last.total_usage if last else ev.Usage(),
                cost_usd=last.total_cost_usd if last else 0.0,
            )
        )
