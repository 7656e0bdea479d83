"""Runs in the background: one task per card, several cards at once.

The language server must stay responsive while cards run, and it must always be able to say what
each run is doing (lenses, progress, diagnostics, status). `RunManager` owns the tasks, picks the
model for a run (a replayed transcript or the Messages API), runs it (optionally on a loop in
a thread of its own, so the editor's loop stays free), folds every event into a `RunView`
— the run's live state — and hands each event to one listener. It knows nothing of LSP: the
language server is only one listener, and a test can be another.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from cardrunner.agent.events import Event, RunFinished, RunStarted
from cardrunner.agent.review import Approver, ReviewDecision, ReviewRequest
from cardrunner.config.settings import Settings
from cardrunner.run.log import runs_dir
from cardrunner.run.prepare import (
    ResumeGrant,
    RunOptions,
    RunRefused,
    _prepare_resume,
    choose_model,
    replay_path,
)
from cardrunner.run.session import run_card
from cardrunner.run.store import CardStore, DiskCardStore
from cardrunner.run.view import RunView, card_slug

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

    async def update(self, path: Path, **fields: Any) -> None:
        await self._call("update", path, **fields)


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
        self._cancel: dict[Path, Callable[[], object]] = {}
        # Touched only on the loop the runs execute on:
        self._run_tasks: dict[Path, asyncio.Task[Any]] = {}
        self._cancel_early: set[Path] = set()
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
        if resume is not None and importlib.util.find_spec("cardrunner.run.resume") is None:
            raise RunRefused("resume is not available in this version of cardrunner")
        if replay_path(settings, self.root, path) is None:
            choose_model(settings, self.root, path, self._env)  # fails fast without a key
        view = RunView(card_path=path, run_id=self._new_id(path), title=path.stem)
        view.log_path = runs_dir(self.root) / f"{view.run_id}.jsonl"
        self._views[path] = view
        home = asyncio.get_running_loop()
        done: asyncio.Future[None] = home.create_future()
        drive = self._drive(view, settings, resume, home, done)
        # The task is never cancelled before it starts (its `finally` must run): a cancel goes
        # through the runs loop, after the task's first step, or is remembered until then.
        if self._runs_loop is None:
            self._keep.add(asyncio.create_task(drive, name=f"run {view.run_id}"))
            self._cancel[path] = lambda: home.call_soon(self._cancel_here, path)
        else:
            runs = self._runs_loop.loop
            asyncio.run_coroutine_threadsafe(drive, runs)
            self._cancel[path] = lambda: runs.call_soon_threadsafe(self._cancel_here, path)
        self._done[path] = done
        return view

    def _cancel_here(self, path: Path) -> None:
        """On the loop the run executes on: cancel its task, or remember to at its start."""
        task = self._run_tasks.get(path)
        if task is not None:
            task.cancel()
        else:
            self._cancel_early.add(path)

    def cancel(self, card_path: Path) -> bool:
        """Cancel the card's run; the runner ends it `Failed`/`cancelled`. False if none runs."""
        if not self.is_live(card_path):
            return False
        self._cancel[card_path]()
        return True

    async def wait(self, card_path: Path) -> None:
        """Wait until the card's current run (if any) has ended (`card_path` resolved)."""
        done = self._done.get(card_path)
        if done is not None:
            await asyncio.gather(done, return_exceptions=True)

    async def aclose(self, seconds: float = 10.0) -> None:
        """Cancel every run and wait (bounded) until they have written their results."""
        live = [path for path in self._done if self.is_live(path)]
        for path in live:
            self._cancel[path]()
        if live:
            await asyncio.wait([self._done[p] for p in live], timeout=seconds)

    def _new_id(self, path: Path) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{card_slug(path)}"[:76]
        taken = {v.run_id for v in self._views.values()}
        run_id, n = base, 1
        while run_id in taken or (runs_dir(self.root) / f"{run_id}.jsonl").exists():
            n += 1
            run_id = f"{base}-{n}"
        return run_id

    async def _drive(
        self,
        view: RunView,
        settings: Settings,
        resume: ResumeGrant | None,
        home: asyncio.AbstractEventLoop,
        done: asyncio.Future[None],
    ) -> None:
        """One run, start to end, on the runs loop; every event is handed to the home loop."""
        path = view.card_path
        task = asyncio.current_task()
        assert task is not None
        self._run_tasks[path] = task

        def emit(event: Event) -> None:
            if asyncio.get_running_loop() is home:
                self._emit(view, event)
            else:
                home.call_soon_threadsafe(self._emit, view, event)

        ended = False
        try:
            if path in self._cancel_early:
                self._cancel_early.discard(path)
                raise asyncio.CancelledError
            options = await self._options(view, settings, resume, home)
            async for event in run_card(options):
                emit(event)
                ended = ended or isinstance(event, RunFinished)
        except RunRefused as exc:
            emit(_failure(view, "config_error", str(exc)))
            ended = True
        except asyncio.CancelledError:
            # Cancelled before the runner could turn it into a result (while preparing).
            emit(_failure(view, "cancelled", "the run was cancelled before it started"))
            ended = True
        except Exception as exc:
            log.exception("run %s crashed", view.run_id)
            emit(_failure(view, "interrupted", f"{type(exc).__name__}: {exc}"))
            ended = True
        finally:
            if not ended:
                emit(_failure(view, "interrupted", "the run ended without a result"))
            self._run_tasks.pop(path, None)
            self._keep.discard(task)  # type: ignore[arg-type]
            if asyncio.get_running_loop() is home:
                self._ended(view, done)
            else:
                home.call_soon_threadsafe(self._ended, view, done)

    async def _options(
        self,
        view: RunView,
        settings: Settings,
        resume: ResumeGrant | None,
        home: asyncio.AbstractEventLoop,
    ) -> RunOptions:
        model = await asyncio.to_thread(
            choose_model, settings, self.root, view.card_path, self._env
        )
        approver, store = self._approver(view), self._store
        if asyncio.get_running_loop() is not home:  # they talk to the editor: on its loop
            approver = _OnLoop(approver, home)
            store = _OnLoop(store, home)
        options = RunOptions(
            root=self.root,
            card_path=view.card_path,
            settings=settings,
            model=model,
            approver=approver,
            card_store=store,
            run_id=view.run_id,
        )
        if resume is not None:
            await _prepare_resume(options, resume)
        return options

    def _emit(self, view: RunView, event: Event) -> None:
        view.apply(event)
        if isinstance(event, RunStarted):  # a resumed run may continue under another id
            view.log_path = runs_dir(self.root) / f"{view.run_id}.jsonl"
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


def _failure(
    view: RunView, reason: Literal["config_error", "cancelled", "interrupted"], detail: str
) -> RunFinished:
    """A result for a run the runner could not finish itself (it keeps the counts so far)."""
    return RunFinished(
        status="failed",
        reason=reason,
        detail=detail,
        rounds=view.round,
        tool_calls=0,
        input_tokens=view.tokens,
        output_tokens=0,
        cost_usd=view.cost_usd,
        commit=view.commit,
    )
