"""The cost forecast the lens and the board show before a card is run (`run/forecast.py`).

What it needs besides the card is read once and kept: the repository's past runs (one
`git log` over the card commits' trailers) and the size of the project's instruction files.
Both are read again when a run ends, which is when either can have changed for a run that
follows (the costs only when HEAD moved: they are its history; one read for runs that end
together); the card's own text is read from the index on every lens, since it changes as the
user types, and its estimate is a few additions.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from cardrunner.card.card import Card, card_slug
from cardrunner.config.agentfiles import instruction_files
from cardrunner.config.view import SettingsView
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError
from cardrunner.run.choices import card_view
from cardrunner.run.forecast import Forecast, forecast, rules_tokens, start_tokens


class Forecasts:
    """Each card's forecast, from the costs of the repository's runs kept here."""

    def __init__(self, root: Path, settings: Callable[[], SettingsView]) -> None:
        self._root = root
        self._settings = settings
        self._costs: dict[str, list[float]] = {}
        """Card slug → what its past runs cost, newest first."""
        self._instruction_bytes = 0
        self._rules = rules_tokens()
        self._head: str | None = None
        """The commit `_costs` were read at."""
        self._reading = asyncio.Lock()
        self._asked = 0
        """Loads asked for so far; `_read_from`: how many of them the newest read covers."""
        self._read_from = 0
        self._slugs: dict[Path, str] = {}
        """Card path (resolved, as the index keys it) → its slug."""

    async def load(self) -> bool:
        """Read the past runs' costs and the instruction files' size again; True when either
        changed. Loads asked for while one is under way share the next one: eight runs that
        end together read git once, not eight times."""
        self._asked += 1
        asked = self._asked
        async with self._reading:
            if self._read_from >= asked:  # a read that began after this was asked is done
                return False
            self._read_from = self._asked
            return await self._read()

    async def _read(self) -> bool:
        """The costs are HEAD's history: `git log` runs only when HEAD has moved since."""
        before = (self._costs, self._instruction_bytes)
        repo = BranchRepo(self._root)
        try:
            head = await repo.head()  # None outside a repository, or before its first commit
            if head != self._head:
                runs = await repo.card_runs_at(head) if head else {}
                self._costs = {
                    slug: [r.cost_usd for r in records if r.cost_usd is not None]
                    for slug, records in runs.items()
                }
                self._head = head
        except GitError:
            self._costs, self._head = {}, None
        self._instruction_bytes = await asyncio.to_thread(self._instructions)
        return (self._costs, self._instruction_bytes) != before

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
        settings = card_view(self._settings(), card)
        mine = self._slugs.get(path)
        if mine is None:  # two `realpath`s: a fifth of a lens answer's time, asked every lens
            mine = self._slugs[path] = card_slug(path, self._root)
        others = [c for slug, costs in self._costs.items() if slug != mine for c in costs]
        start = start_tokens(card, self._instruction_bytes, self._rules)
        return forecast(settings, start, self._costs.get(mine, []), others)
