"""Preparing a run: the one step every front end (CLI, language server, demo) goes through.

`prepare_run` chooses the model (a replayed transcript or the Messages API), prepares a resume
from the run log and sweeps what a dead cardrunner left behind. The front ends differ only in
the `RunOptions` they fill in and in how they show a run, never in how it is set up; the run's
session calls `prepare_run` inside its lifecycle, so a refusal ends the run like any other end.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cardrunner.agent.model import Model
from cardrunner.agent.review import Approver
from cardrunner.config.settings import Settings
from cardrunner.run.resume import ResumeGrant, ResumeState, prepare_resume
from cardrunner.run.store import CardStore, DiskCardStore
from cardrunner.run.sweep import keep_ledger, sweep
from cardrunner.tools.groups import ProcessGroups


@dataclass
class RunOptions:
    """Everything a front end decides about one run; nothing here has been checked yet."""

    root: Path
    card_path: Path
    settings: Settings
    approver: Approver
    card_store: CardStore = field(default_factory=DiskCardStore)
    model: Model | None = None
    """A model the caller built itself; None lets `prepare_run` choose one."""
    replay: Path | None = None
    """The transcript to play (`--replay`, the demo); None falls back to `settings.replay`."""
    resume: ResumeGrant | None = None
    """Continue the card's last unfinished run, with this much extra budget."""
    run_id: str | None = None
    """The id a front end announced before the run started (the editor shows it at once)."""
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    """Where the API key is looked up (tests pass their own)."""
    commit_card_state: bool = True
    """Commit the card's final state after the run (`run/cardcommit.py`). Off for `--no-commit`
    (nothing at all is committed) and on CI, which folds the card into its one commit."""
    processes: ProcessGroups = field(default_factory=ProcessGroups)
    """The run's ledger of process groups: its commands, app and MCP servers join it."""


@dataclass
class PreparedRun:
    """A run that may start: its model, the resumed state if any, and notes for the user."""

    options: RunOptions
    model: Model
    resume: ResumeState | None
    notes: list[str]


class RunRefused(Exception):
    """A run cannot start (already running, no API key, resume unavailable …); str() says why."""


MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set. Set it (and ANTHROPIC_BASE_URL for another Messages-API "
    "endpoint) in the environment cardrunner runs in, or play a transcript without a key: "
    "--replay TRANSCRIPT.json, or `replay` in cardrunner.toml (docs/transcripts.md)."
)
"""The one wording of the missing-key refusal, for the CLI and the editor alike."""


def replay_path(settings: Settings, root: Path, card_path: Path) -> Path | None:
    """`settings.replay` as the transcript for this card: the file itself, or `<dir>/<stem>.json`."""
    if not settings.replay:
        return None
    path = Path(settings.replay)
    path = path if path.is_absolute() else root / path
    folder = path.is_dir() or (not path.exists() and not path.suffix)  # a folder not made yet
    return path / f"{card_path.stem}.json" if folder else path


def _transcript(options: RunOptions) -> Path | None:
    return options.replay or replay_path(options.settings, options.root, options.card_path)


def refuse_early(options: RunOptions) -> None:
    """The checks that need no file or network, so an editor command can refuse at once."""
    if options.model is None and _transcript(options) is None:
        _require_key(options.env)


def _require_key(env: Mapping[str, str]) -> None:
    from cardrunner.models.anthropic import has_credentials

    if not has_credentials(dict(env)):
        raise RunRefused(MISSING_KEY)


def choose_model(
    settings: Settings,
    root: Path,
    card_path: Path,
    env: Mapping[str, str],
    replay: Path | None = None,
) -> Model:
    """A `ScriptedModel` for a transcript (`replay`, else `settings.replay`), else the API.

    Raises RunRefused if neither can work. Reads the transcript file: call it off the event loop.
    """
    transcript = replay or replay_path(settings, root, card_path)
    if transcript is not None:
        from cardrunner.models.scripted import ScriptedModel, load_transcript

        try:
            return ScriptedModel(
                load_transcript(transcript),
                name=f"replay:{transcript.name}",
                api_model=settings.model,
            )
        except (OSError, ValueError) as exc:
            raise RunRefused(f"cannot read the transcript {transcript}: {exc}") from exc
    _require_key(env)
    from cardrunner.models.anthropic import AnthropicModel

    return AnthropicModel(settings.model, settings.options)


def api_model(model: Model) -> str:
    """The Messages API model a run addresses (a transcript stands in for one)."""
    from cardrunner.models.scripted import ScriptedModel

    return model.api_model if isinstance(model, ScriptedModel) else model.name


async def prepare_run(options: RunOptions) -> PreparedRun:
    """Model, resume and sweep for one run; raises RunRefused with the reason it cannot start."""
    o = options
    model = o.model
    if model is None:
        model = await asyncio.to_thread(
            choose_model, o.settings, o.root, o.card_path, o.env, o.replay
        )
    resume = None
    if o.resume is not None:
        try:  # reads the run log: off the loop
            resume = await asyncio.to_thread(prepare_resume, o.root, o.card_path, model, o.resume)
        except ValueError as exc:
            raise RunRefused(f"cannot resume: {exc}") from exc
    refusals = o.settings.refusals(api_model(model), resume.limits if resume else None)
    if refusals:
        raise RunRefused("; ".join(refusals))
    swept = await asyncio.to_thread(sweep, o.root)
    keep_ledger(o.root, o.processes)
    notes = (
        [f"stopped {len(swept)} process group(s) left by a cardrunner that died"] if swept else []
    )
    return PreparedRun(o, model, resume, notes)
