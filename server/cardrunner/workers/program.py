"""`python -m cardrunner.workers.program`: one run in a process of its own, for the language server.

A run shares nothing with the editor's server but a pipe: its JSON work, the model's SDK and the
MCP clients would otherwise hold the server's GIL (and its memory) while the user types. The
worker lowers its own CPU priority, reads one `start` message on stdin, lowers it further if the
run's `run_priority` asks for it (`workers/priority.py`), says `started`, plays
the run's `RunSession` and writes every event to stdout (`workers/wire.py`); the review, the
card writes and the trust question are asked of the server, which answers them in the editor.

A spare (`workers/spare.py`) is the same program started before its run is asked for: its first
message is `warm`, so it imports the adapters the run will need (`preload`) — a worker started
for a run imports them lazily, when the run first needs them — says `ready` and then waits for
its `start` like any worker. Until a `start` is read there is no run to stop: a SIGTERM ends the
process, and so does the end of its input (the server went away).

When the server goes away (its end of the pipe closes: a crash, SIGKILL, an editor that killed
it) the worker ends the run as `interrupted` — processes stopped, changes kept for a resume,
the result in the log, the card written to disk — instead of finishing it: nobody would be
there to review its commit. A SIGTERM is the user's cancel.

The run's end is the worker's alone. A stop reaches the run once: the first one — the server's
`cancel`, a SIGTERM, the server gone — is the one the run ends with, and any later one, or one
that comes once the run is ending on its own, is dropped. A second cancel would land in the
run's own end (stopping its app, removing its worktree, writing its card) and cut it short:
the server that was told `exit` asks the run to stop, waits a bounded while
(`lsp/server.py` `WIND_DOWN_SECONDS`) and ends; its end closes the pipe, and the worker, still
ending the run, must not take that as a second stop (it left the card `In Work`). While the
server lives it bounds the worker (`workers/handle.py`); once it is gone, the worker bounds
itself: whatever still holds it `ORPHAN_SECONDS` later (a wedged stop, a thread blocked in the
kernel) ends with its process groups, and the log without a result reads as interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from cardrunner.agent.events import Event
from cardrunner.agent.review import ReviewDecision, ReviewRequest
from cardrunner.card.card import DiskCardStore
from cardrunner.card.record import CardUpdate
from cardrunner.config.settings import Settings
from cardrunner.processes.groups import ProcessGroups
from cardrunner.run.liveness import interruption
from cardrunner.run.options import ResumeGrant, RunOptions
from cardrunner.run.session import RunSession
from cardrunner.trust.consent import TrustQuestion
from cardrunner.workers import awaits, wire
from cardrunner.workers.priority import PRIORITIES, lower
from cardrunner.workers.wire import SERVER_GONE, Channel, ServerGone

T = TypeVar("T")

NICENESS = PRIORITIES["low"].nice
"""How much lower than the editor's server every worker starts (the default `run_priority`): a
spare cannot know its run's setting, and a worker can go lower later but never back up."""
ORPHAN_SECONDS = 300.0
"""How long a worker whose server is gone may take to end its run and exit. Ending a run that
kept changes (its worktree removed, its card committed) has taken over 30 s on a loaded
machine; a worker still there after this is held by what will not end (a wedged stop, a
thread blocked in the kernel), and it is ended with its process groups."""


class RemoteApprover:
    """`Approver` that asks the server's review (the editor decides)."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        answer = await self._channel.request("review", {"request": wire.encode_review(request)})
        return wire.decode_decision(answer)


class RemoteTrust:
    """`TrustAsker` that asks the server (the editor asks the user); no answer is a no."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    async def ask(self, question: TrustQuestion) -> bool:
        try:
            answer = await self._channel.request(
                "trust", {"question": wire.encode_question(question)}
            )
        except (ServerGone, RuntimeError):
            return False
        return answer is True


class RemoteCardStore:
    """`CardStore` that asks the server (which knows the editor's buffers); once the server is
    gone, the card is written on disk, where the next server reads it."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._disk = DiskCardStore()

    async def update(self, path: Path, change: CardUpdate) -> None:
        try:
            await self._channel.request("update_card", wire.encode_update(path, change))
        except ServerGone:
            await self._disk.update(path, change)


def options(start: wire.StartRun, settings: Settings, channel: Channel) -> RunOptions:
    resume = None
    if start.resume_rounds is not None:
        resume = ResumeGrant(start.resume_rounds, start.resume_cost_usd)
    return RunOptions(
        root=Path(start.root),
        card_path=Path(start.card_path),
        settings=settings,
        approver=RemoteApprover(channel),
        card_store=RemoteCardStore(channel),
        resume=resume,
        run_id=start.run_id,
        env=start.env,
        trust=RemoteTrust(channel),
    )


PRELOAD = (
    "concurrent.futures.thread",  # asyncio.to_thread's executor
    "cardrunner.apirules.binding",
    "cardrunner.apirules.promptcache",
    "cardrunner.models.scripted",
    "cardrunner.apirules.validation",
)
"""What every run imports lazily, whichever its model."""


def preload(warm: wire.WarmUp) -> None:
    """Import, ahead of the run, what it would import lazily: the scripted model and its
    checks, the tools' schema validator, and the SDK and the MCP client when `warm` says the
    settings use them. Each adapter names its own lazy imports."""
    from cardrunner.agent.toolpool import preload as preload_gate

    for name in PRELOAD:
        importlib.import_module(name)
    preload_gate()
    if warm.api:
        from cardrunner.models.anthropic import preload as preload_api

        preload_api()
    if warm.mcp:
        from cardrunner.tools.mcp.hub import preload as preload_mcp

        preload_mcp()


SLOW_CANCEL_SECONDS = 10.0
"""A cancelled run that still runs after this long says where it waits (on stderr, the
server's log): the server kills it at `CANCEL_SECONDS`, and the stack is what is left to read."""


def _say_where(task: asyncio.Task[None]) -> None:
    if not task.done():
        logging.getLogger(__name__).warning(
            "a cancelled run is still running after %.0f s; it waits at:\n%s",
            SLOW_CANCEL_SECONDS,
            "\n".join(awaits.chain(task)),
        )


async def relay(events: AsyncGenerator[T, None], send: Callable[[T], Awaitable[None]]) -> None:
    """Send each of the session's `events`; a cancel that lands in `send`, between two events,
    is thrown into the session, which ends the run as it ends one cancelled inside it.

    A plain `async for` would let that cancel end this task with the session still suspended:
    its cleanup then ran when the generator was finalised — with no cause (the card's result
    said "the loop ended without a result") and, as the worker shut down, cancelled itself
    before the card was written (the server killed while a round's events were being sent
    left the card `In Work` and the live marker behind)."""
    async with contextlib.aclosing(events):
        step: Callable[[], Awaitable[T]] = events.__anext__
        while True:
            try:
                event = await step()
            except StopAsyncIteration:
                return
            step = events.__anext__
            try:
                await send(event)
            except asyncio.CancelledError as exc:
                step = functools.partial(events.athrow, exc)


class Worker:
    """The run and the two directions of its pipe."""

    def __init__(self, reader: asyncio.StreamReader, channel: Channel) -> None:
        self._reader = reader
        self._channel = channel
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._cancel_early: tuple[str | None] | None = None
        self._session: RunSession | None = None
        self._stopping = False
        """A stop was sent to the run: it ends with that one (see `cancel`)."""
        self._processes: ProcessGroups | None = None
        """The run's process groups, for `_abandon`."""

    async def serve(self) -> None:
        first = await self._reader.readline()
        if first and json.loads(first).get("kind") == "warm":
            preload(wire.WarmUp.model_validate_json(first))
            await self._channel.send({"kind": "ready"})
            first = await self._reader.readline()
        if not first:
            return
        start = wire.StartRun.model_validate_json(first)
        settings = Settings.model_validate(start.settings)
        lower(settings.run_priority)  # before `started`: nothing of the run runs any higher
        await self._channel.send({"kind": "started"})
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.cancel, None)
        self._task = asyncio.create_task(self._play(options(start, settings, self._channel)))
        listening = asyncio.create_task(self._listen())
        try:
            await self._task
        finally:
            listening.cancel()

    async def _play(self, run: RunOptions) -> None:
        self._session, self._processes = RunSession(run), run.processes
        self._started = True  # a cancel from now on reaches the session's own `finally`
        if self._cancel_early is not None:
            self.cancel(*self._cancel_early)
        await relay(self._session.events(), self._send_event)

    async def _send_event(self, event: Event) -> None:
        await self._channel.send({"kind": "event", **wire.encode_event(event)}, hold=True)

    def cancel(self, why: str | None) -> None:
        """Stop the run: `why` makes it `interrupted`, none the user's `cancelled`. Only the
        first stop is sent, and none once the run is ending on its own: a cancel lands where
        the run is, and in its end it would cut that end short (the card left `In Work`)."""
        if self._task is None or not self._started:
            if self._cancel_early is None:
                self._cancel_early = (why,)
            return
        if self._stopping or (self._session is not None and self._session.ending):
            return
        self._stopping = True
        self._task.cancel(interruption(why) if why else None)
        asyncio.get_running_loop().call_later(SLOW_CANCEL_SECONDS, _say_where, self._task)

    async def _listen(self) -> None:
        while line := await self._reader.readline():
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if message.get("kind") == "response":
                    self._channel.answered(message)
                elif message.get("kind") == "cancel":
                    self.cancel(message.get("why"))
        self._channel.gone()
        self._orphaned()
        self.cancel(SERVER_GONE)

    def _orphaned(self) -> None:
        """The server is gone, and its bound on this process with it: this process bounds
        itself, on a thread of its own (the loop may be what is stuck)."""
        timer = threading.Timer(ORPHAN_SECONDS, self._abandon)
        timer.daemon = True
        timer.start()

    def _abandon(self) -> None:
        """On the timer's thread: end the run's process groups and this process."""
        logging.getLogger(__name__).warning(
            "the run did not end within %.0f s of the server going away: ended", ORPHAN_SECONDS
        )
        if self._processes is not None:
            with contextlib.suppress(Exception):
                self._processes.kill_all()
        os._exit(1)


async def _main(read: int, write: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26, loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    channel = Channel(writer)
    await Worker(reader, channel).serve()
    with contextlib.suppress(OSError, ConnectionError):
        await channel.flush()
        writer.close()


def _own_pipes() -> tuple[int, int]:
    """The pipe's two descriptors, moved away from 0 and 1: what the run starts (builds, apps,
    MCP servers) inherits /dev/null and stderr, so nothing it prints can corrupt the channel."""
    read, write = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return read, write


def main() -> None:
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    read, write = _own_pipes()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="worker: %(message)s")
    asyncio.run(_main(read, write))


if __name__ == "__main__":
    main()
