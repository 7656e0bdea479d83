"""The choices a card offers now, as code lenses on its first line, and the cost forecast they show.

Idle: "▶ Run card" (or, while a `depends_on:` card is not Done, why it waits and "Run anyway"),
"Resume" when the last run stopped for a resumable reason ("Grant +20 rounds" / "Grant +$1" when
a budget stopped it), "Show last log" when there is one. Running: "■ Cancel" and a live summary.
Awaiting review: "Review changes", "✓ Accept & commit", "✗ Reject". `card_choices` is shared
with the code actions, so an editor without lenses offers exactly the same things.

The cost forecast the lens and the board show before a card is run (`record/forecast.py`) needs,
besides the card, what is read once and kept: the repository's past runs (one `git log` over the
card commits' trailers) and the size of the project's instruction files. Both are read again
when a run ends, which is when either can have changed for a run that follows (the costs only
when HEAD moved: they are its history; one read for runs that end together); the card's own text
is read from the index on every lens, since it changes as the user types, and its estimate is a
few additions. A past run's cost counts only when it can be checked (`checked_costs`: against
its run log when the log is here): the trailers are commit text anyone with push access writes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from cardrunner.card.card import Card, card_slug
from cardrunner.card.record import RESUMABLE_REASONS
from cardrunner.config.instructions import instruction_files
from cardrunner.config.plainsettings import SettingsView
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError
from cardrunner.lsp.core.index import CardEntry
from cardrunner.lsp.core.protocolnames import (
    ACCEPT,
    CANCEL,
    REJECT,
    RESUME,
    RUN,
    SHOW_DIFF,
    SHOW_LOG,
)
from cardrunner.record.forecast import (
    TOOLS_TOKENS,
    Checked,
    Forecast,
    checked_costs,
    forecast,
    rules_tokens,
    start_tokens,
)
from cardrunner.record.state import RunState
from cardrunner.run.choices import card_view


@dataclass(frozen=True)
class CardSituation:
    """Everything the choices depend on."""

    uri: str
    """The card's URI as the client spells it (commands carry it back)."""
    entry: CardEntry | None
    view: RunState | None
    live: bool
    reviewing: bool
    orphan_run: str | None = None
    """A run of the card whose log has no result and no live process (see `interrupted_runs`)."""
    blocked: str | None = None
    """Why the card must wait: a `depends_on:` card that is not Done (`board/order.py`)."""
    forecast: str | None = None
    """What a run is likely to cost, and on what basis (`record/forecast.py`)."""
    package: str = ""
    """The monorepo package whose commands test the card: `package web (packages/web)`."""
    package_refused: str = ""
    """Why no package's commands could test the card (its run is refused: config/packages.py)."""


def resumable(situation: CardSituation) -> bool:
    """The last run stopped by a budget, a crash, a cancel or an API error."""
    view, entry = situation.view, situation.entry
    if view is not None and view.state == "failed":
        return view.reason in RESUMABLE_REASONS
    card = entry.card if entry else None
    if card is None:
        return False
    if card.state == "In Work" or (view is None and situation.orphan_run is not None):
        return True
    last = card.last_run
    reason = (last.reason if last else None) or card.reason
    return card.state == "Failed" and reason in RESUMABLE_REASONS


def last_reason(situation: CardSituation) -> str | None:
    """Why the card's last run stopped (None while unknown or after success)."""
    if situation.view is not None and situation.view.state == "failed":
        return situation.view.reason
    card = situation.entry.card if situation.entry else None
    if card is None:
        return None
    if situation.view is None and situation.orphan_run is not None:
        return "interrupted"
    last = card.last_run
    return (last.reason if last else None) or card.reason


GRANT_ROUNDS, GRANT_COST_USD = 20, 1.0


def resume_choices(uri: str, reason: str | None) -> list[types.Command]:
    """A budget-stopped card offers more of that budget; any other resumable stop just resumes."""
    if reason == "max_rounds":
        grant: dict[str, float] = {"grantRounds": GRANT_ROUNDS}
        title = f"Grant +{GRANT_ROUNDS} rounds"
    elif reason == "max_cost":
        grant, title = {"grantCostUsd": GRANT_COST_USD}, f"Grant +${GRANT_COST_USD:g}"
    else:
        return [types.Command(title="Resume", command=RESUME, arguments=[uri])]
    return [types.Command(title=title, command=RESUME, arguments=[uri, grant])]


def has_log(situation: CardSituation) -> bool:
    if situation.view is not None and situation.view.log_path is not None:
        return True
    card = situation.entry.card if situation.entry else None
    last = card.last_run if card else None
    return bool(last and last.log)


def lens_summary(view: RunState) -> str:
    """The running card's lens: its summary (an estimated cost as `~$0.18 est.`), and
    "baseline check" before the first round."""
    text = view.summary()
    return f"baseline check · {text}" if view.round <= 0 and not view.tool else text


def card_choices(path: Path, situation: CardSituation) -> list[types.Command]:
    """The commands the card offers in its current situation, most likely first."""
    uri = situation.uri

    def cmd(title: str, command: str) -> types.Command:
        return types.Command(title=title, command=command, arguments=[uri])

    if situation.reviewing:
        return [
            cmd("Review changes", SHOW_DIFF),
            cmd("✓ Accept & commit", ACCEPT),
            cmd("✗ Reject", REJECT),
        ]
    if situation.live and situation.view is not None:
        return [cmd("■ Cancel", CANCEL), cmd(lens_summary(situation.view), SHOW_LOG)]
    if situation.entry is None or situation.entry.card is None:
        return [cmd("Show last log", SHOW_LOG)] if has_log(situation) else []
    if situation.blocked:
        anyway = types.Command(title="Run anyway", command=RUN, arguments=[uri, {"anyway": True}])
        out = [cmd(f"⏸ {situation.blocked}", RUN), anyway]
    else:
        out = [cmd("▶ Run card", RUN)]
    if resumable(situation):
        out += resume_choices(uri, last_reason(situation))
    if has_log(situation):
        out.append(cmd("Show last log", SHOW_LOG))
    return out


def code_lenses(path: Path, situation: CardSituation) -> list[types.CodeLens]:
    """The card's choices, then what the card asks for its run (model, effort, budgets) and
    what a run is likely to cost, as lenses to read, not to click."""
    at_top = types.Range(types.Position(0, 0), types.Position(0, 0))
    lenses = [types.CodeLens(range=at_top, command=c) for c in card_choices(path, situation)]
    if situation.live or situation.reviewing:
        return lenses
    card = situation.entry.card if situation.entry else None
    asked = card.choices.describe() if card is not None else ""
    refused = f"✗ {situation.package_refused.split(';')[0]}" if situation.package_refused else ""
    for line in (situation.package, refused, asked, situation.forecast):
        if line:
            lenses.append(types.CodeLens(range=at_top, command=types.Command(line, "")))
    return lenses


CODE_ACTION_KIND = "source.cardrunner"


def code_actions(
    path: Path, situation: CardSituation, only: list[str] | None
) -> list[types.CodeAction]:
    """The same choices as code actions: kindless for the lightbulb, `source.cardrunner` when
    the client asks only for source actions."""
    kind: str | None = None
    if only:
        if not any(CODE_ACTION_KIND.startswith(k) or k == "" for k in only):
            return []
        kind = CODE_ACTION_KIND
    return [
        types.CodeAction(title=c.title, kind=kind, command=c) for c in card_choices(path, situation)
    ]


class Forecasts:
    """Each card's forecast, from the costs of the repository's runs kept here."""

    def __init__(self, root: Path, settings: Callable[[], SettingsView]) -> None:
        self._root = root
        self._settings = settings
        self._costs: dict[str, Checked] = {}
        """Card slug → what its past runs cost (the checked ones, newest first)."""
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
                floor, root = self._rules + TOOLS_TOKENS, self._root
                self._costs = await asyncio.to_thread(
                    lambda: {s: checked_costs(r, root, floor) for s, r in runs.items()}
                )
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
        others = [c for slug, k in self._costs.items() if slug != mine for c in k.costs]
        own = self._costs.get(mine, Checked())
        ignored = own.ignored if own.costs else sum(k.ignored for k in self._costs.values())
        start = start_tokens(card, self._instruction_bytes, self._rules)
        return forecast(settings, start, own.costs, others, ignored)
