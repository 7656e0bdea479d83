"""One work-done progress per run: begun when the run starts, always ended.

Each run gets a token `cardrunner/run/<run id>`; a report goes out per round and per tool call
with the percentage of rounds used. The progress lives in its own task that drains a queue
of messages and ends the progress in `finally`, so no run — crashed, cancelled, or cut off by
shutdown — leaves a spinner behind. Cancelling it in the editor cancels the run.

Some clients lose our `window/workDoneProgress/create` (lsp-mode 8 drops one that arrives in
the same read as the command's response, about one run in three). So the create is sent a
moment after the command has been answered, and when no answer comes within `CREATE_TIMEOUT`
it is sent again with a new token (`…#2`, `…#3`): the same token could be refused as a
duplicate by a client that did get the first one. A client that answers with an error gets no
progress, and no retry. Clients without `window.workDoneProgress` see the round in the run's
diagnostic and the summary lens instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.core.client import Client
from cardrunner.record.state import RunState

log = logging.getLogger("cardrunner.lsp.progress")

_END = object()

CREATE_DELAY = 0.05
"""Seconds between the command's answer and the progress `create` (a read of its own)."""
CREATE_TIMEOUT = 3.0
"""Seconds to wait for the client's answer to one `create`."""
CREATE_ATTEMPTS = 3


class _Progress:
    def __init__(self, token: str, title: str) -> None:
        self.token = token
        self.title = title
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None


class RunProgress:
    """Begins, reports and ends the progress of each run (when the client supports it)."""

    def __init__(
        self, server: LanguageServer, client: Client, cancel: Callable[[Path], object]
    ) -> None:
        self._ls = server
        self._client = client
        self._cancel = cancel
        self._active: dict[Path, _Progress] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def token(self, view: RunState) -> str | None:
        """The progress token of a live run, if it has one."""
        active = self._active.get(view.card_path)
        return active.token if active else None

    def start(self, view: RunState) -> str | None:
        """Start the progress of a run; returns its token (None: the client has no progress UI)."""
        if not self._client.supports_progress or view.card_path in self._active:
            return None
        progress = _Progress(f"{names.PROGRESS_TOKEN_PREFIX}{view.run_id}", f"Card: {view.title}")
        self._active[view.card_path] = progress
        progress.task = asyncio.create_task(self._run(progress, view.card_path))
        self._tasks.add(progress.task)
        progress.task.add_done_callback(self._tasks.discard)
        return progress.token

    def report(self, view: RunState) -> None:
        """Queue a report with the run's state now (one per round, tool call and review)."""
        progress = self._active.get(view.card_path)
        if progress is not None:
            progress.queue.put_nowait((doing(view), _percent(view)))

    def end(self, view: RunState) -> None:
        progress = self._active.pop(view.card_path, None)
        if progress is not None:
            progress.queue.put_nowait(_final(view))
            progress.queue.put_nowait(_END)

    async def _create(self, first: str) -> str:
        """Create the progress, retrying with a new token while answers are lost; the token
        the client accepted (TimeoutError after `CREATE_ATTEMPTS` lost answers)."""
        await asyncio.sleep(CREATE_DELAY)  # after the command's response, in a read of its own
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            token = first if attempt == 1 else f"{first}#{attempt}"
            if await _create_once(self._client, token):
                return token
            log.info("progress create %s was not answered; trying a new token", token)
        raise TimeoutError(f"the client answered none of {CREATE_ATTEMPTS} progress creates")

    async def aclose(self) -> None:
        """Let ended progresses send their end; cancel the rest (their `finally` ends them)."""
        for progress in self._active.values():
            if progress.task is not None:
                progress.task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)

    async def _run(self, progress: _Progress, card_path: Path) -> None:
        wp = self._ls.work_done_progress
        begun = False
        final = "ended"
        token = progress.token
        try:
            token = progress.token = await self._create(progress.token)
            cancelled: Future[None] = Future()
            wp.tokens[token] = cancelled
            loop = asyncio.get_running_loop()
            cancelled.add_done_callback(
                lambda f: (
                    loop.call_soon_threadsafe(self._cancel, card_path) if f.cancelled() else None
                )
            )
            wp.begin(
                token,
                types.WorkDoneProgressBegin(
                    title=progress.title,
                    cancellable=True,
                    message="baseline check",
                    percentage=0,
                ),
            )
            begun = True
            while (item := await progress.queue.get()) is not _END:
                if isinstance(item, str):
                    final = item
                elif isinstance(item, tuple):
                    message, percent = item
                    wp.report(
                        token, types.WorkDoneProgressReport(message=message, percentage=percent)
                    )
        except Exception as exc:
            log.info("progress %s: %r", token, exc)
        finally:
            if begun:
                try:
                    wp.end(token, types.WorkDoneProgressEnd(message=final))
                except Exception as exc:
                    log.info("progress end %s: %r", token, exc)
            wp.tokens.pop(token, None)  # pygls never forgets tokens (pygls#607)


async def _create_once(client: Client, token: str) -> bool:
    """One `create`: True when answered, False when the answer was lost (raises on an error)."""
    try:
        await client.request(
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.WorkDoneProgressCreateParams(token=token),
            seconds=CREATE_TIMEOUT,
        )
    except TimeoutError:
        return False
    return True


def doing(view: RunState) -> str:
    """What the run is doing, in the words every editor view uses: the baseline check before the
    first round, "waiting for your review" (not its `git_commit` "running") while a review waits;
    an estimated cost is marked as the summary marks it (`~$0.18 est.`)."""
    line = view.live_line()
    if view.state == "review":
        tool = f" · {view.tool}"
        summary = view.summary()
        line = "waiting for your review · " + (summary.removesuffix(tool) if view.tool else summary)
    elif view.round <= 0 and not view.tool:
        line = f"baseline check · {line}"
    return line


def _percent(view: RunState) -> int | None:
    if not view.max_rounds:
        return None
    return max(0, min(100, round(100 * view.round / view.max_rounds)))


def _final(view: RunState) -> str:
    if view.state == "done" and view.unmerged_branch:
        return f"committed on {view.unmerged_branch} only (not on your branch) · {view.summary()}"
    if view.state == "done":
        return f"done · {view.summary()}"
    if view.state == "failed":
        return f"failed ({view.reason}) · {view.summary()}"
    return view.summary()
