"""Preparing a run: the one step every front end (CLI, language server, demo) goes through.

`prepare_run` first makes sure the user trusts the repository with what its config asks for
(trust/gate.py, through the front end's `TrustAsker`), then chooses the model (a replayed transcript or the Messages API), prepares a resume
from the run log and sweeps what a dead cardrunner left behind. The front ends differ only in
the `RunOptions` they fill in and in how they show a run, never in how it is set up; the run's
session calls `prepare_run` inside its lifecycle, so a refusal ends the run like any other end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cardrunner.agent.model import Model
from cardrunner.card.card import CardError, load_card
from cardrunner.config.settings import Settings
from cardrunner.run.choices import card_settings
from cardrunner.run.options import (
    RunOptions,
    RunRefused,
    replay_path,
    require_key,
)
from cardrunner.run.resume import ResumeState, prepare_resume
from cardrunner.run.sweep import keep_ledger, sweep
from cardrunner.trust.gate import Untrusted, ensure_trusted

__all__ = ["PreparedRun", "api_model", "choose_model", "prepare_run"]


@dataclass
class PreparedRun:
    """A run that may start: its model, the resumed state if any, and notes for the user."""

    options: RunOptions
    model: Model
    resume: ResumeState | None
    notes: list[str]


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
    require_key(env)
    from cardrunner.models.anthropic import AnthropicModel

    return AnthropicModel(settings.model, settings.options)


def api_model(model: Model) -> str:
    """The Messages API model a run addresses (a transcript stands in for one)."""
    from cardrunner.models.scripted import ScriptedModel

    return model.api_model if isinstance(model, ScriptedModel) else model.name


async def prepare_run(options: RunOptions) -> PreparedRun:
    """Trust, model, resume and sweep for one run; raises RunRefused with the reason it cannot
    start. A resume's limits are the current settings' (plus its grant), never the log's.

    The card's own choices (model, effort, budgets) are applied after trust, within the
    settings' caps; a card that cannot be read is refused later, when the run opens it."""
    try:  # before anything of the repository runs: its transcript, its sweep, its commands
        await ensure_trusted(options.root, options.env, options.trust, options.trusted)
    except Untrusted as exc:
        raise RunRefused(str(exc)) from exc
    o, chosen = await asyncio.to_thread(_with_card_choices, options)
    model = o.model
    if model is None:
        model = await asyncio.to_thread(
            choose_model, o.settings, o.root, o.card_path, o.env, o.replay
        )
    resume = None
    if o.resume is not None:
        try:  # reads the run log: off the loop
            resume = await asyncio.to_thread(
                prepare_resume, o.root, o.card_path, model, o.resume, o.settings.limits
            )
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
    if o.model is not None and o.settings.model != options.settings.model:
        chosen.append(
            f"the card asks for model {o.settings.model}; this run's model was "
            f"given by its caller ({o.model.name})"
        )
    return PreparedRun(o, model, resume, [*chosen, *notes])


def _with_card_choices(options: RunOptions) -> tuple[RunOptions, list[str]]:
    """`options` with the card's choices in its settings, and what was clamped."""
    try:
        card = load_card(options.card_path)
    except CardError:
        return options, []
    settings, notes = card_settings(options.settings, card)
    return replace(options, settings=settings), notes
