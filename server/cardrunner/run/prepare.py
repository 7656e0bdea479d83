"""Preparing a run: the one step every front end (CLI, language server, demo) takes first.

It chooses the model (a replayed transcript or the Messages API), prepares a resume from the run
log and sweeps what a dead cardrunner left behind. The front ends then differ only in how they
show a run, never in how it is set up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.agent.model import Model
from cardrunner.agent.review import Approver
from cardrunner.config.settings import Settings
from cardrunner.run.store import CardStore, DiskCardStore

if TYPE_CHECKING:
    from cardrunner.run.resume import ResumeState


@dataclass
class RunOptions:
    """Everything a front end decides about one run."""

    root: Path
    card_path: Path
    settings: Settings
    model: Model
    approver: Approver
    card_store: CardStore = field(default_factory=DiskCardStore)
    run_id: str | None = None
    resume: ResumeState | None = None
    """Set by `resume.prepare_resume`: continue that run instead of starting a new one."""


class RunRefused(Exception):
    """A run cannot start (already running, no API key, resume unavailable …); str() says why."""


class MissingKey(RunRefused):
    """No transcript to replay and no API key: each front end words the fix its own way."""


@dataclass(frozen=True)
class ResumeGrant:
    """Extra budget for a resumed run (rounds and USD on top of what the run had)."""

    rounds: int = 0
    cost_usd: float = 0.0


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
            return ScriptedModel(
                load_transcript(transcript),
                name=f"replay:{transcript.name}",
                api_model=settings.model,
            )
        except (OSError, ValueError) as exc:
            raise RunRefused(f"cannot read the transcript {transcript}: {exc}") from exc
    from cardrunner.models.anthropic import AnthropicModel, has_credentials

    if not has_credentials(dict(env)):
        raise MissingKey(MISSING_KEY)
    return AnthropicModel(settings.model, settings.options)


async def _prepare_resume(options: RunOptions, grant: ResumeGrant) -> None:
    try:
        from cardrunner.run.resume import prepare_resume  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise RunRefused(f"resume is not available: {exc}") from exc
    try:  # reads the run log: off the loop
        await asyncio.to_thread(
            prepare_resume, options, grant_rounds=grant.rounds, grant_cost=grant.cost_usd
        )
    except ValueError as exc:
        raise RunRefused(f"cannot resume: {exc}") from exc
