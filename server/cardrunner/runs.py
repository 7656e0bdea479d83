"""Runs in the background: one asyncio task per card, several cards at once.

The language server must stay responsive while cards run, and it must always be able to say what
each run is doing (lenses, progress, diagnostics, status). `RunManager` owns the tasks, picks the
model for a run (a replayed transcript or the Messages API), folds every event into a `RunView`
— the run's live state — and hands each event to one listener. It knows nothing of LSP: the
language server is only one listener, and a test can be another.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from cardrunner.events import (
    BuildChecked,
    CriterionReported,
    Event,
    Problem,
    ReviewDecided,
    ReviewRequested,
    RoundFinished,
    RoundStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from cardrunner.models.base import Model
from cardrunner.review import Approver
from cardrunner.runlog import runs_dir
from cardrunner.runner import CardStore, DiskCardStore, RunOptions, run_card
from cardrunner.settings import Settings

log = logging.getLogger(__name__)

RunState = Literal["running", "review", "done", "failed"]


class RunRefused(Exception):
    """A run cannot start (already running, no API key, resume unavailable …); str() says why."""


@dataclass
class Criterion:
    """One acceptance criterion as the run sees it: pending until the model reports on it."""

    text: str
    status: Literal["pending", "verified", "failed"] = "pending"
    evidence: str = ""


@dataclass
class RunView:
    """The live state of one run, folded from its events; what every view of a run shows."""

    card_path: Path
    run_id: str
    title: str
    state: RunState = "running"
    round: int = 0
    max_rounds: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    tool: str | None = None
    reason: str | None = None
    detail: str = ""
    commit: str | None = None
    log_path: Path | None = None
    criteria: list[Criterion] = field(default_factory=list)
    problems: dict[str, list[Problem]] = field(default_factory=dict)
    """Build/test problems by path relative to the root; replaced at each build."""
    last_round_text: str = ""

    @property
    def live(self) -> bool:
        return self.state in ("running", "review")

    def summary(self) -> str:
        """`round 7/60 · 31.2k tok · $0.18 · build_app` — the one line every view shows."""
        limit = f"/{self.max_rounds}" if self.max_rounds else ""
        parts = [
            f"round {self.round}{limit}",
            f"{_tokens(self.tokens)} tok",
            f"${self.cost_usd:.2f}",
        ]
        if self.tool:
            parts.append(self.tool)
        return " · ".join(parts)

    def apply(self, event: Event) -> None:
        """Fold one event into the view."""
        match event:
            case RunStarted():
                self.run_id, self.title = event.run_id, event.title
                self.max_rounds = int(event.limits.get("max_rounds") or 0)
                self.criteria = [Criterion(text) for text in event.criteria]
                self.round = event.resumed_from_round
            case RoundStarted():
                self.round, self.max_rounds = event.round, event.max_rounds
            case RoundFinished():
                self.round = event.round
                self.tokens, self.cost_usd = event.total_usage.total, event.total_cost_usd
                self.last_round_text = event.text
            case ToolStarted():
                self.tool = event.name
            case ToolFinished():
                self.tool = None
            case CriterionReported() if 0 <= event.index < len(self.criteria):
                status: Literal["verified", "failed"] = "verified" if event.passed else "failed"
                self.criteria[event.index] = Criterion(
                    self.criteria[event.index].text, status, event.evidence
                )
            case BuildChecked():
                self.problems = {}
                for problem in event.problems:
                    self.problems.setdefault(problem.path, []).append(problem)
            case ReviewRequested():
                self.state = "review"
            case ReviewDecided():
                self.state = "running"
                self.commit = event.commit or self.commit
            case RunFinished():
                self.state = "done" if event.status == "done" else "failed"
                self.reason, self.detail = event.reason, event.detail
                self.commit = event.commit or self.commit
                self.tokens = (
                    event.input_tokens
                    + event.output_tokens
                    + event.cache_read_input_tokens
                    + event.cache_creation_input_tokens
                )
                self.cost_usd, self.round, self.tool = event.cost_usd, event.rounds, None
                self.problems = {}
            case _:
                pass


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def card_slug(path: Path) -> str:
    """The same slug `Card.slug` gives, without reading the card (for the run id up front)."""
    ascii_stem = unicodedata.normalize("NFKD", path.stem).encode("ascii", "ignore")
    return re.sub(r"[^a-z0-9]+", "-", ascii_stem.decode().lower()).strip("-") or "card"


@dataclass(frozen=True)
class ResumeGrant:
    """Extra budget for a resumed run (rounds and USD on top of what the run had)."""

    rounds: int = 0
    cost_usd: float = 0.0


class RunListener(Protocol):
    """Whoever shows runs: called on the event loop for every event, then once at the end."""

    def run_event(self, view: RunView, event: Event) -> None: ...

    def run_ended(self, view: RunView) -> None: ...


def replay_path(settings: Settings, root: Path, card_path: Path) -> Path | None:
    """`settings.replay` as the transcript for this card: the file itself, or `<dir>/<stem>.json`."""
    if not settings.replay:
        return None
    path = Path(settings.replay)
    path = path if path.is_absolute() else root / path
    folder = path.is_dir() or (not path.exists() and not path.suffix)  # a folder not made yet
    return path / f"{card_path.stem}.json" if folder else path


MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set for the language server. Set it (and ANTHROPIC_BASE_URL for "
    "another Messages-API endpoint) in the environment the editor starts cardrunner with, or set "
    "`replay` in cardrunner.toml to play a transcript without a key."
)


def choose_model(settings: Settings, root: Path, card_path: Path, env: Mapping[str, str]) -> Model:
    """A `ScriptedModel` when `replay` is set, else `AnthropicModel`; raises RunRefused if neither
    can work. Reads the transcript file: call it off the event loop."""
    transcript = replay_path(settings, root, card_path)
    if transcript is not None:
        from cardrunner.models.scripted import ScriptedModel, load_transcript

        try:
            return ScriptedModel(load_transcript(transcript), name=f"replay:{transcript.name}")
        except (OSError, ValueError) as exc:
            raise RunRefused(f"cannot read the transcript {transcript}: {exc}") from exc
    from cardrunner.models.anthropic import AnthropicModel, has_credentials

    if not has_credentials(dict(env)):
        raise RunRefused(MISSING_KEY)
    return AnthropicModel(settings.model, settings.options)


class RunManager:
    """One task per card; one run per card at a time; any number of cards at once."""

    def __init__(
        self,
        root: Path,
        settings: Callable[[], Settings],
        listener: RunListener,
        approver: Callable[[RunView], Approver],
        card_store: CardStore | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self._settings = settings
        self._listener = listener
        self._approver = approver
        self._store = card_store or DiskCardStore()
        self._env = env if env is not None else os.environ
        self._views: dict[Path, RunView] = {}
        self._tasks: dict[Path, asyncio.Task[None]] = {}

    # Cards are keyed by their resolved path: `start` resolves; the lookups below expect
    # resolved paths (the views call them on every event, and resolving costs a syscall a part).

    def get(self, card_path: Path) -> RunView | None:
        """The card's live run, or its last run in this session."""
        return self._views.get(card_path)

    def is_live(self, card_path: Path) -> bool:
        task = self._tasks.get(card_path)
        return task is not None and not task.done()

    def views(self) -> list[RunView]:
        return list(self._views.values())

    def start(self, card_path: Path, resume: ResumeGrant | None = None) -> RunView:
        """Start a run in the background and return its view at once; raises RunRefused."""
        path = card_path.resolve()
        if self.is_live(path):
            raise RunRefused(f"{path.name} is already running; cancel it first")
        settings = self._settings()
        if resume is not None and importlib.util.find_spec("cardrunner.resume") is None:
            raise RunRefused("resume is not available in this version of cardrunner")
        if replay_path(settings, self.root, path) is None:
            choose_model(settings, self.root, path, self._env)  # fails fast without a key
        view = RunView(card_path=path, run_id=self._new_id(path), title=path.stem)
        view.log_path = runs_dir(self.root) / f"{view.run_id}.jsonl"
        self._views[path] = view
        task = asyncio.create_task(self._drive(view, settings, resume), name=f"run {view.run_id}")
        self._tasks[path] = task
        return view

    def cancel(self, card_path: Path) -> bool:
        """Cancel the card's run; the runner ends it `Failed`/`cancelled`. False if none runs."""
        task = self._tasks.get(card_path)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def wait(self, card_path: Path) -> None:
        """Wait until the card's current run (if any) has ended (`card_path` resolved)."""
        task = self._tasks.get(card_path)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def aclose(self, seconds: float = 10.0) -> None:
        """Cancel every run and wait (bounded) until they have written their results."""
        tasks = [t for t in self._tasks.values() if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=seconds)

    def _new_id(self, path: Path) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{card_slug(path)}"[:76]
        taken = {v.run_id for v in self._views.values()}
        run_id, n = base, 1
        while run_id in taken or (runs_dir(self.root) / f"{run_id}.jsonl").exists():
            n += 1
            run_id = f"{base}-{n}"
        return run_id

    async def _drive(self, view: RunView, settings: Settings, resume: ResumeGrant | None) -> None:
        ended = False
        try:
            options = await self._options(view, settings, resume)
            async for event in run_card(options):
                self._emit(view, event)
                ended = ended or isinstance(event, RunFinished)
        except RunRefused as exc:
            self._emit(view, _failure(view, "config_error", str(exc)))
            ended = True
        except asyncio.CancelledError:
            # Cancelled before the runner could turn it into a result (while preparing).
            self._emit(view, _failure(view, "cancelled", "the run was cancelled before it started"))
            ended = True
        except Exception as exc:
            log.exception("run %s crashed", view.run_id)
            self._emit(view, _failure(view, "interrupted", f"{type(exc).__name__}: {exc}"))
            ended = True
        finally:
            if not ended:
                self._emit(view, _failure(view, "interrupted", "the run ended without a result"))
            with contextlib.suppress(Exception):
                self._listener.run_ended(view)

    async def _options(
        self, view: RunView, settings: Settings, resume: ResumeGrant | None
    ) -> RunOptions:
        model = await asyncio.to_thread(
            choose_model, settings, self.root, view.card_path, self._env
        )
        options = RunOptions(
            root=self.root,
            card_path=view.card_path,
            settings=settings,
            model=model,
            approver=self._approver(view),
            card_store=self._store,
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


async def _prepare_resume(options: RunOptions, grant: ResumeGrant) -> None:
    try:
        from cardrunner.resume import prepare_resume  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise RunRefused(f"resume is not available: {exc}") from exc
    try:
        if inspect.iscoroutinefunction(prepare_resume):
            await prepare_resume(options, grant_rounds=grant.rounds, grant_cost=grant.cost_usd)
        else:
            await asyncio.to_thread(
                prepare_resume, options, grant_rounds=grant.rounds, grant_cost=grant.cost_usd
            )
    except ValueError as exc:
        raise RunRefused(f"cannot resume: {exc}") from exc


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
