"""A whole card run through the real `anthropic` SDK against the strict fake Messages API.

The prefix check on thinking signatures is always on in the fake; a test asserts that no request
was rejected (`api.violations`) and reads what was sent from `api.requests`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from cardrunner.agent.events import Event, RunFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.config.settings import Settings
from cardrunner.models.anthropic import AnthropicModel
from cardrunner.run.options import ResumeGrant, RunOptions
from cardrunner.run.session import run_card
from cardrunner.testing.fake_api import ANTHROPIC, Endpoint, FakeMessagesAPI
from cardrunner.testing.fake_script import Responder


@dataclass
class ApiRun:
    """What one run did: its events and the fake that answered it."""

    events: list[Event]
    api: FakeMessagesAPI
    bodies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> RunFinished:
        last = self.events[-1]
        assert isinstance(last, RunFinished), last
        return last


def settings_of(root: Path) -> Settings:
    settings, problems = load_settings(root)
    assert not problems, problems
    return settings


async def run_through_api(
    root: Path,
    card: Path,
    steps: Responder | Sequence[Any],
    *,
    resume_rounds: int | None = None,
    check_history: bool = True,
    run_chooses_model: bool = False,
    endpoint: Endpoint = ANTHROPIC,
) -> ApiRun:
    """Run `card` once (or resume it, granting `resume_rounds`) with `steps` as the model.

    `run_chooses_model`: the run builds its own SDK client (from the environment, pointed at the
    fake), as a front end's run does, so the card's own model and effort apply; `endpoint` is
    how the fake behaves then (testing/fake_api.py's Ollama, DeepSeek, gateways)."""
    if run_chooses_model:
        fake = FakeMessagesAPI(steps, check_history=check_history, endpoint=endpoint)
        async with fake as api:
            env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test"}
            with mock.patch.dict(os.environ, env):
                options = RunOptions(
                    root=root, card_path=card, settings=settings_of(root), approver=AutoApprover()
                )
                events = [e async for e in run_card(options)]
        return ApiRun(events, api, [r.body for r in api.requests if r.index is not None])
    import anthropic

    settings = settings_of(root)
    async with FakeMessagesAPI(steps, check_history=check_history) as api:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.base_url, max_retries=0)
        model = AnthropicModel(settings.model, settings.options, client=client)
        grant = ResumeGrant(rounds=resume_rounds) if resume_rounds is not None else None
        options = RunOptions(
            root=root,
            card_path=card,
            settings=settings,
            model=model,
            approver=AutoApprover(),
            resume=grant,
        )
        events = [e async for e in run_card(options)]
        await client.close()
    bodies = [r.body for r in api.requests if r.index is not None]
    return ApiRun(events, api, bodies)
