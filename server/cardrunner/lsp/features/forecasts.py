"""The cost forecast the lens and the board show before a card is run (`run/forecast.py`).

What it needs besides the card is read once and kept: the repository's past runs (one
`git log` over the card commits' trailers) and the size of the project's instruction files.
Both are read again when a run ends, which is when either can have changed for a run that
follows; the card's own text is read from the index on every lens, since it changes as the
user types, and its estimate is a few additions.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from cardrunner.card.card import Card, card_slug
from cardrunner.config.agentfiles import instruction_files
from cardrunner.config.settings import Settings
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError
from cardrunner.run.choices import card_settings
from cardrunner.run.forecast import Forecast, forecast, rules_tokens, start_tokens


class Forecasts:
    """Each card's forecast, from the costs of the repository's runs kept here."""

    def __init__(self, root: Path, settings: Callable[[], Settings]) -> None:
        self._root = root
        self._settings = settings
        self._costs: dict[str, list[float]] = {}
        """Card slug → what its past runs cost, newest first."""
        self._instruction_bytes = 0
        self._rules = rules_tokens()

    async def load(self) -> None:
        """Read the past runs' costs and the instruction files' size again."""
        repo = BranchRepo(self._root)
        try:
            runs = await repo.all_card_runs() if await repo.is_repo() else {}
        except GitError:
            runs = {}
        self._costs = {
            slug: [r.cost_usd for r in records if r.cost_usd is not None]
            for slug, records in runs.items()
        }
        self._instruction_bytes = await asyncio.to_thread(self._instructions)

    def _instructions(self) -> int:
        """What the project's instructions add to the system prompt, in bytes (within the cap)."""
        agent, write = self._settings().agent, self._settings().paths.write
        if not agent.project_instructions:
            return 0
        total = 0
        for path in instruction_files(self._root, write):
            try:
                total += os.stat(path).st_size
            except OSError:
                continue
        return min(total, agent.instructions_max_bytes)

    def of(self, path: Path, card: Card) -> Forecast:
        """The forecast of a run of `card` (at `path`) with the card's choices applied."""
        settings, _ = card_settings(self._settings(), card)
        mine = card_slug(path, self._root)
        others = [c for slug, costs in self._costs.items() if slug != mine for c in costs]
        start = start_tokens(card, self._instruction_bytes, self._rules)
        return forecast(settings, start, self._costs.get(mine, []), others)
