"""One ACP session: one card, its runs, and the prompt turns they are shown in.

The run goes in a task of its own that only puts the run's events on a queue
(`RunSession(options).events()`, as the CLI iterates it); a second task sends each event's
updates to the client as it comes, so the client sees the run as it goes and a cancel reaches
the run's own lifecycle (its `finally` stops the app and tidies the write area), never the
sending. A prompt turn lasts until the run ends — or until a rejected review waits for its
reason: that turn ends asking why, and the next prompt's text is the reason; its turn then
shows the rest of the run. Each run gets the MCP servers the client passed (acp/clientside.py)
beside the project's, and reads files through the client where it offers that
(acp/clientside.py). A prompt that describes a new card gets a draft (acp/cards.py), kept
until `/save` writes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

from acp import Client
from acp.schema import StopReason

from cardrunner.acp.approver import PermissionApprover
from cardrunner.acp.cards import (
    Ask,
    Block,
    Draft,
    cards_text,
    described,
    draft_card,
    prompt_text,
    read_prompt,
    remember,
    remembered,
    save,
)
from cardrunner.acp.clientside import ClientFiles, ClientServers
from cardrunner.acp.updates import RunUpdates, SessionUpdate, say
from cardrunner.agent import events as ev
from cardrunner.config.loading import has_clash, load_settings
from cardrunner.record.log import read_events, read_log
from cardrunner.run.liveness import interruption
from cardrunner.run.options import ResumeGrant, RunOptions
from cardrunner.run.resume import find_resumable
from cardrunner.run.session import RunSession

log = logging.getLogger(__name__)


class CardSession:
    """A session of the agent panel, in the workspace `root`."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        root: Path,
        servers: ClientServers | None = None,
        files: ClientFiles | None = None,
    ) -> None:
        self._client = client
        self.session_id = session_id
        self.root = root
        self._servers = servers or ClientServers()
        self._files = files
        self._remarks = list(self._servers.remarks)
        """Said once, at the start of the first prompt's answer (client MCP servers left out)."""
        self._card: Path | None = None
        """The card open in this session: the one it ran, loaded or was last shown."""
        self._draft: Draft | None = None
        self._queue: asyncio.Queue[ev.Event | None] = asyncio.Queue()
        self._run: asyncio.Task[None] | None = None
        self._shown: asyncio.Task[StopReason] | None = None
        self._turn: asyncio.Future[StopReason] | None = None
        self._reason: asyncio.Future[str] | None = None
        self._resume: Path | None = None
        """The card whose interrupted run `session/load` showed: the next prompt continues it."""

    @property
    def running(self) -> bool:
        return self._run is not None and not self._run.done()

    async def _send(self, update: SessionUpdate) -> None:
        try:
            await self._client.session_update(self.session_id, update)
        except Exception as exc:  # the client went away: the run still ends properly
            log.warning("cannot send a session update: %s", exc)

    async def prompt(self, blocks: Sequence[Block]) -> StopReason:
        """One prompt turn; returns once its part of the run (or the answer) is over."""
        for remark in self._remarks:
            await self._send(say(remark))
        self._remarks.clear()
        if self._reason is not None and not self._reason.done():
            turn = self._new_turn()
            self._reason.set_result(prompt_text(blocks))
            return await turn
        if self.running:
            await self._send(say("A run is going in this session; wait for it, or cancel it."))
            return "end_turn"
        folder = load_settings(self.root)[0].cards
        ask = read_prompt(self.root, folder, blocks, self._card)
        if self._resume is not None and ask.what in ("other", "resume", "draft"):
            card, self._resume = self._resume, None
            return await self._start(card, resume=True)
        if ask.card is not None and ask.what in ("run", "resume"):
            return await self._start(ask.card, resume=ask.what == "resume")
        await self._send(say(self._answer(ask, folder, blocks)))
        return "end_turn"

    def _answer(self, ask: Ask, folder: str, blocks: Sequence[Block]) -> str:
        """What a prompt that starts no run is told: a draft, the saved draft, or the cards."""
        lines = described(self.root, folder, blocks)
        if ask.what == "draft" and (drafted := draft_card(lines)) is not None:
            self._card, self._draft = ask.card, drafted
            return drafted.message(folder)
        if ask.what != "save":
            return cards_text(self.root, folder)
        if self._draft is None:
            return "There is no drafted card to save: describe one first (a title line, then one line per criterion)."
        path = save(self.root, folder, self._draft)
        self._draft = None
        shown = path.relative_to(self.root).as_posix()
        return f"Saved as `{shown}`. Run it with `/run {shown}`."

    def _new_turn(self) -> asyncio.Future[StopReason]:
        self._turn = asyncio.get_running_loop().create_future()
        return self._turn

    def _end_turn(self, why: StopReason) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.set_result(why)

    async def _start(self, card: Path, *, resume: bool) -> StopReason:
        settings, problems = load_settings(self.root)
        for problem in problems:
            await self._send(say(f"settings: {problem}"))
        if has_clash(problems):
            return "end_turn"
        settings, left_out = self._servers.into(settings)
        for remark in left_out:
            await self._send(say(remark))
        remember(self.root, self.session_id, card)
        self._card = card
        options = RunOptions(
            root=self.root,
            card_path=card,
            settings=settings,
            approver=PermissionApprover(self._client, self.session_id, self),
            resume=ResumeGrant() if resume else None,
            read_text=self._files,
        )
        turn = self._new_turn()
        self._run = asyncio.create_task(self._produce(options))
        self._shown = asyncio.create_task(self._show(RunUpdates(self.root)))
        return await turn

    async def _produce(self, options: RunOptions) -> None:
        """The run's events onto the queue; nothing here awaits but the run itself."""
        try:
            async for event in RunSession(options).events():
                self._queue.put_nowait(event)
        finally:
            self._queue.put_nowait(None)

    async def _show(self, updates: RunUpdates) -> StopReason:
        """Send each event's updates as it comes; end the turn when the run has ended."""
        why: StopReason = "end_turn"
        while (event := await self._queue.get()) is not None:
            for update in updates.updates(event):
                await self._send(update)
            if isinstance(event, ev.RunFinished) and event.reason == "cancelled":
                why = "cancelled"
            self._queue.task_done()
        self._queue.task_done()
        self._end_turn(why)
        return why

    async def flushed(self) -> None:
        await self._queue.join()

    async def next_prompt(self, question: str) -> str:
        await self._send(say(question))
        self._reason = asyncio.get_running_loop().create_future()
        self._end_turn("end_turn")
        try:
            return await self._reason
        finally:
            self._reason = None

    def cancel(self, why: str | None = None) -> None:
        """`session/cancel`: the run ends as the editor's Cancel ends it (`cancelled`); with
        `why` it is interrupted instead (the client went away) and can be resumed."""
        if self.running and self._run is not None:
            self._run.cancel(interruption(why) if why else None)

    async def closed(self) -> None:
        """Wait for the run and its updates to end."""
        for task in (self._run, self._shown):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def load(self) -> bool:
        """`session/load`: replay the card's interrupted run; the next prompt continues it.
        False for a session this workspace never had."""
        card = remembered(self.root, self.session_id)
        if card is None:
            return False
        self._card = card
        found = await asyncio.to_thread(find_resumable, self.root, card)
        if found is None:
            await self._send(say(f"The last run of {card.name} ended; nothing to resume."))
            return True
        updates = RunUpdates(self.root)
        for event in await asyncio.to_thread(lambda: list(read_events(read_log(found)))):
            for update in updates.updates(event):
                await self._send(update)
        self._resume = card
        await self._send(
            say("This run was interrupted. Send any message (or /resume) to continue it.")
        )
        return True
