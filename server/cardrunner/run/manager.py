"""Runs in the background: one task per card, several cards at once.

The language server must stay responsive while cards run, and it must always be able to say what
each run is doing (lenses, progress, diagnostics, status). `RunManager` only schedules: it owns
the tasks, starts each run's `RunSession` (optionally on a loop in a thread of its own, so the
editor's loop stays free), folds every event into a `RunView` — the run's live state — and
hands each event to one listener. How a run is prepared and how it ends is the session's
business alone. It knows nothing of LSP: the language server is only one listener, and a test
can be another.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from cardrunner.agent.events import Event, RunStarted
from cardrunner.agent.review import Approver, ReviewDecision, ReviewRequest
from cardrunner.card.record import CardUpdate
from cardrunner.config.paths import StatePaths
from cardrunner.config.settings import Settings
from cardrunner.run.liveness import interruption
from cardrunner.run.log import new_run_id
from cardrunner.run.prepare import RunOptions, RunRefused, refuse_early
from cardrunner.run.resume import ResumeGrant
from cardrunner.run.session import RunSession
from cardrunner.run.store import CardStore, DiskCardStore
from cardrunner.run.view import RunView

log = logging.getLogger(__name__)


class RunListener(Protocol):
    """Whoever shows runs: called on the event loop for every event, then once at the end."""

    def run_event(self, view: RunView, event: Event) -> None: ...

    def run_ended(self, view: RunView) -> None: ...


class RunLoop:
    """An event loop in a thread of its own, where runs execute.

    A run does real work between its awaits (JSON of long conversations, the run log, request
    checks); on the editor's loop that work would delay every lens and keystroke. Runs on this
    loop leave the editor's loop free; only events, reviews and card writes cross over."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="runs", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


class _OnLoop:
    """Calls an async `review`/`update` of an object that lives on another loop."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target, self._loop = target, loop

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        coro = getattr(self._target, name)(*args, **kwargs)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        return cast(ReviewDecision, await self._call("review", request))

    async def update(self, path: Path, change: CardUpdate) -> None:
        await self._call("update", path, change)


class RunManager:
    """One task per card; one run per card at a time; any number of cards at once.

    Views, the listener, the approver and the card store belong to the loop that calls
    `start` (the editor's). With `runs_loop` the runs themselves execute there instead."""

    def __init__(
        self,
        root: Path,
        settings: Callable[[], Settings],
        listener: RunListener,
        approver: Callable[[RunView], Approver],
        card_store: CardStore | None = None,
        env: Mapping[str, str] | None = None,
        runs_loop: RunLoop | None = None,
    ) -> None:
        self.root = root
        self._settings = settings
        self._listener = listener
        self._approver = approver
        self._store = card_store or DiskCardStore()
        self._env = env if env is not None else os.environ
        self._runs_loop = runs_loop
        self._views: dict[Path, RunView] = {}
        self._done: dict[Path, asyncio.Future[None]] = {}
        self._cancel: dict[Path, Callable[[str | None], object]] = {}
        # Touched only on the loop the runs execute on:
        self._run_tasks: dict[Path, asyncio.Task[Any]] = {}
        self._cancel_early: dict[Path, str | None] = {}
        self._keep: set[asyncio.Task[None]] = set()

    # Cards are keyed by their resolved path: `start` resolves; the lookups below expect
    # resolved paths (the views call them on every event, and resolving costs a syscall a part).

    def get(self, card_path: Path) -> RunView | None:
        """The card's live run, or its last run in this session."""
        return self._views.get(card_path)

    def is_live(self, card_path: Path) -> bool:
        done = self._done.get(card_path)
        return done is not None and not done.done()

    def views(self) -> list[RunView]:
        return list(self._views.values())

    def start(self, card_path: Path, resume: ResumeGrant | None = None) -> RunView:
        """Start a run in the background and return its view at once; raises RunRefused."""
        path = card_path.resolve()
        if self.is_live(path):
            raise RunRefused(f"{path.name} is already running; cancel it first")
        settings = self._settings()
        if settings.isolation is None:  # in the editor each card gets its own worktree by default
            settings = settings.model_copy(update={"isolation": True})
        taken = {v.run_id for v in self._views.values()}
        view = RunView(card_path=path, run_id=new_run_id(self.root, path, taken), title=path.stem)
        view.log_path = StatePaths(self.root).log(view.run_id)
        options = RunOptions(
            root=self.root,
            card_path=path,
            settings=settings,
            approver=self._approver(view),
            card_store=self._store,
            resume=resume,
            run_id=view.run_id,
            env=self._env,
        )
        refuse_early(options)  # no key: the editor hears it at once, not from a failed run
        self._views[path] = view
        home = asyncio.get_running_loop()
        done: asyncio.Future[None] = home.create_future()
        drive = self._drive(view, options, home, done)
        # The task is never cancelled before it starts (its `finally` must run): a cancel goes
        # through the runs loop, after the task's first step, or is remembered until then.
        if self._runs_loop is None:
            self._keep.add(asyncio.create_task(drive, name=f"run {view.run_id}"))
            self._cancel[path] = lambda why: home.call_soon(self._cancel_here, path, why)
        else:
            runs = self._runs_loop.loop
            asyncio.run_coroutine_threadsafe(drive, runs)
            self._cancel[path] = lambda why: runs.call_soon_threadsafe(self._cancel_here, path, why)
        self._done[path] = done
        return view

    def _cancel_here(self, path: Path, why: str | None) -> None:
        """On the loop the run executes on: cancel its task, or remember to at its start."""
        task = self._run_tasks.get(path)
        if task is not None:
            task.cancel(interruption(why) if why else None)
        else:
            self._cancel_early[path] = why

    def cancel(self, card_path: Path, interrupted: str | None = None) -> bool:
        """Cancel the card's run; the runner ends it `Failed`/`cancelled` — or `interrupted`
        when `interrupted` says why it had to stop (its editor went away). False if none runs."""
        if not self.is_live(card_path):
            return False
        self._cancel[card_path](interrupted)
        return True

    async def wait(self, card_path: Path) -> None:
        """Wait until the card's current run (if any) has ended (`card_path` resolved)."""
        done = self._done.get(card_path)
        if done is not None:
            await asyncio.gather(done, return_exceptions=True)

    async def aclose(self, seconds: float = 10.0, interrupted: str | None = None) -> None:
        """Cancel every run (as `cancel` does) and wait (bounded) until they have written
        their results."""
        live = [path for path in self._done if self.is_live(path)]
        for path in live:
            self._cancel[path](interrupted)
        if live:
            await asyncio.wait([self._done[p] for p in live], timeout=seconds)

    async def _drive(
        self,
        view: RunView,
        options: RunOptions,
        home: asyncio.AbstractEventLoop,
        done: asyncio.Future[None],
    ) -> None:
        """One run on the runs loop: its session's events, each handed to the home loop."""
        path = view.card_path
        task = asyncio.current_task()
        assert task is not None
        self._run_tasks[path] = task
        if path in self._cancel_early:  # the session ends it `cancelled` at its first step
            why = self._cancel_early.pop(path)
            task.cancel(interruption(why) if why else None)
        if asyncio.get_running_loop() is not home:  # they talk to the editor: on its loop
            options.approver = _OnLoop(options.approver, home)
            options.card_store = _OnLoop(options.card_store, home)
        try:
            async for event in RunSession(options).events():
                self._on_home(home, self._emit, view, event)
        finally:
            self._run_tasks.pop(path, None)
            self._keep.discard(task)  # type: ignore[arg-type]
            self._on_home(home, self._ended, view, done)

    @staticmethod
    def _on_home(home: asyncio.AbstractEventLoop, call: Callable[..., None], *args: Any) -> None:
        """Call `call(*args)` on the home loop: now if this is it, else as soon as it can."""
        if asyncio.get_running_loop() is home:
            call(*args)
        else:
            home.call_soon_threadsafe(call, *args)

    def _emit(self, view: RunView, event: Event) -> None:
        view.apply(event)
        if isinstance(event, RunStarted):  # a resumed run may continue under another id
            view.log_path = StatePaths(self.root).log(view.run_id)
        try:
            self._listener.run_event(view, event)
        except Exception:
            log.exception("a run listener failed on %s", event.type)

    def _ended(self, view: RunView, done: asyncio.Future[None]) -> None:
        try:
            self._listener.run_ended(view)
        except Exception:
            log.exception("a run listener failed at the end of %s", view.run_id)
        finally:
            if not done.done():
                done.set_result(None)
