"""Runs in the background: one task per card, several cards at once.

The language server must stay responsive while cards run, and it must always be able to say what
each run is doing (lenses, progress, diagnostics, status). `RunManager` only schedules: each run
executes in a worker process of its own (`workers/handle.py`), so a run's work never holds the
editor's GIL; the manager folds every event into a `RunState` — the run's live state — and hands
each event to the listener that started the run. How a run is prepared and how it ends is the
session's business alone, in the worker. It knows nothing of LSP: the language server is only one
listener, and a test can be another.

Once it has started a run, it keeps one spare worker warm for the next (`workers/spare.py`): a run
takes it, and once that run is under way (its first event) the next spare is started, with the
imports the settings' runs need, so it does not compete with the run it stands behind.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cardrunner.agent.review import Approver
from cardrunner.card.card import CardStore, DiskCardStore
from cardrunner.config.paths import StatePaths
from cardrunner.record.state import RunState
from cardrunner.run.options import ResumeGrant, RunRefused
from cardrunner.trust.consent import TrustAsker

if TYPE_CHECKING:  # what starting a run needs loads with the first run (`_launch`)
    from cardrunner.agent.events import Event, RunFinished
    from cardrunner.config.settings import Settings
    from cardrunner.workers.handle import WorkerRun
    from cardrunner.workers.spare import SpareWorker

log = logging.getLogger(__name__)


class RunListener(Protocol):
    """Whoever shows runs: called on the event loop for every event, then once at the end."""

    def run_event(self, view: RunState, event: Event) -> None: ...

    def run_ended(self, view: RunState) -> None: ...


class RunManager:
    """One worker per card; one run per card at a time; any number of cards at once.

    Views, the listener, the approver and the card store belong to the loop that calls
    `start` (the editor's); the worker's requests are answered there. Whoever starts a run
    hands it the listener that shows it and the approver that reviews it, so what shows the
    runs can be built after the manager, and look the runs up in it."""

    def __init__(
        self,
        root: Path,
        settings: Callable[[], Settings],
        card_store: CardStore | None = None,
        env: Mapping[str, str] | None = None,
        spare_idle_seconds: float | None = None,
        trust: TrustAsker | None = None,
    ) -> None:
        self.root = root
        self._settings = settings
        self._store = card_store or DiskCardStore()
        self._env = env if env is not None else os.environ
        self._trust = trust
        """Asks the user to trust the repository (the editor's question); None refuses."""
        self._views: dict[Path, RunState] = {}
        self._done: dict[Path, asyncio.Future[None]] = {}
        self._workers: dict[Path, WorkerRun] = {}
        self._keep: set[asyncio.Task[None]] = set()
        self._spare_idle = spare_idle_seconds
        """How long a spare waits unused (None: the spare's own default)."""
        self._spare: SpareWorker | None = None
        """The warm worker the next run takes (none before the first run)."""
        self._under_way: set[str] = set()
        """Runs that have sent an event (the next spare was asked for then)."""

    @property
    def spare(self) -> SpareWorker:
        """The spare worker, made with the first run (with the wire's models it speaks)."""
        if self._spare is None:
            from cardrunner.workers.spare import SpareWorker

            idle = self._spare_idle
            self._spare = SpareWorker() if idle is None else SpareWorker(idle)
        return self._spare

    def spare_state(self) -> dict[str, object] | None:
        """For the debug command: the spare (`SpareWorker.describe`), None before any."""
        return self._spare.describe() if self._spare is not None else None

    # Cards are keyed by their resolved path: `start` resolves; the lookups below expect
    # resolved paths (the views call them on every event, and resolving costs a syscall a part).

    def get(self, card_path: Path) -> RunState | None:
        """The card's live run, or its last run in this session."""
        return self._views.get(card_path)

    def is_live(self, card_path: Path) -> bool:
        done = self._done.get(card_path)
        return done is not None and not done.done()

    def views(self) -> list[RunState]:
        return list(self._views.values())

    def start(
        self,
        card_path: Path,
        resume: ResumeGrant | None = None,
        *,
        listener: RunListener,
        approver: Callable[[RunState], Approver],
    ) -> RunState:
        """Start a run in the background and return its view at once; raises RunRefused.
        `listener` hears its events, `approver` (given its view) reviews its commit.
        What a run needs (the events', the wire's and the settings' models) loads here, with
        the editor's first run, not in an idle server (bench/RESULTS.md, idle memory)."""
        from cardrunner.record.log import new_run_id
        from cardrunner.run.options import RunOptions, refuse_early
        from cardrunner.workers.handle import WorkerRun

        path = card_path.resolve()
        if self.is_live(path):
            raise RunRefused(f"{path.name} is already running; cancel it first")
        settings = self._settings()
        if settings.isolation is None:  # in the editor each card gets its own worktree by default
            settings = settings.model_copy(update={"isolation": True})
        taken = {v.run_id for v in self._views.values()}
        view = RunState(card_path=path, run_id=new_run_id(self.root, path, taken), title=path.stem)
        view.log_path = StatePaths(self.root).log(view.run_id)
        options = RunOptions(
            root=self.root,
            card_path=path,
            settings=settings,
            approver=approver(view),
            card_store=self._store,
            resume=resume,
            run_id=view.run_id,
            env=self._env,
            trust=self._trust,
        )
        refuse_early(options)  # no key: the editor hears it at once, not from a failed run
        self._views[path] = view
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        worker = self._workers[path] = WorkerRun(
            options, lambda event: self._emit(view, event, listener), self.spare.take
        )
        task = asyncio.create_task(
            self._drive(view, worker, done, listener), name=f"run {view.run_id}"
        )
        self._keep.add(task)
        task.add_done_callback(self._keep.discard)
        self._done[path] = done
        return view

    def cancel(self, card_path: Path, interrupted: str | None = None) -> bool:
        """Cancel the card's run; the runner ends it `Failed`/`cancelled` — or `interrupted`
        when `interrupted` says why it had to stop (its editor went away). False if none runs."""
        if not self.is_live(card_path):
            return False
        self._workers[card_path].cancel(interrupted)
        return True

    async def wait(self, card_path: Path) -> None:
        """Wait until the card's current run (if any) has ended and its process has exited
        (`card_path` resolved)."""
        done = self._done.get(card_path)
        if done is not None:
            await asyncio.gather(done, return_exceptions=True)
        if (worker := self._workers.get(card_path)) is not None:
            await worker.exited()

    async def aclose(self, seconds: float = 10.0, interrupted: str | None = None) -> None:
        """Kill the spare, cancel every run (as `cancel` does) and wait (bounded) until they
        have written their results."""
        spare = self._spare  # first: it ends at once
        closing = [asyncio.ensure_future(spare.close())] if spare is not None else []
        live = [path for path in self._done if self.is_live(path)]
        for path in live:
            self._workers[path].cancel(interrupted)
        if live:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + seconds
            await asyncio.wait([self._done[p] for p in live], timeout=seconds)
            exits = [asyncio.ensure_future(self._workers[p].exited()) for p in live]
            await asyncio.wait(exits, timeout=max(0.0, deadline - loop.time()))
        if closing:
            await asyncio.wait(closing, timeout=seconds)

    async def _drive(
        self,
        view: RunState,
        worker: WorkerRun,
        done: asyncio.Future[None],
        listener: RunListener,
    ) -> None:
        """One run: its worker's events, each folded into the view and handed on."""
        try:
            await worker.play()
        except Exception as exc:  # the worker could not even start (no interpreter, no fork)
            log.exception("the worker of %s failed", view.run_id)
            self._emit(view, refused(f"the run's process could not start: {exc}"), listener)
        finally:
            self._ended(view, done, listener)

    def _emit(self, view: RunState, event: Event, listener: RunListener) -> None:
        from cardrunner.agent.events import RunStarted  # loaded: the event is one

        if view.run_id not in self._under_way:
            self._under_way.add(view.run_id)
            self._refill()
        view.apply(event)
        if isinstance(event, RunStarted):  # a resumed run may continue under another id
            view.log_path = StatePaths(self.root).log(view.run_id)
        try:
            listener.run_event(view, event)
        except Exception:
            log.exception("a run listener failed on %s", event.type)

    def _refill(self) -> None:
        """Ask for the next spare, warmed for what the settings' runs use."""
        from cardrunner.workers import wire

        settings = self._settings()
        self.spare.refill(self.root, wire.WarmUp(api=not settings.replay, mcp=bool(settings.mcp)))

    def _ended(self, view: RunState, done: asyncio.Future[None], listener: RunListener) -> None:
        try:
            listener.run_ended(view)
        except Exception:
            log.exception("a run listener failed at the end of %s", view.run_id)
        finally:
            if not done.done():
                done.set_result(None)


def refused(detail: str) -> RunFinished:
    """The end of a run that never began."""
    from cardrunner.agent.events import RunFinished, Usage

    return RunFinished(
        status="failed", reason="interrupted", detail=detail, rounds=0, tool_calls=0,
        usage=Usage(), cost_usd=0.0,
    )  # fmt: skip
