"""A board plan: which cards to run now, as the matrix a CI engine fans out over.

A board is run as many jobs at once, each on its own branch. Two things make that go wrong
silently: two cards that change the same files (their pull requests conflict, and the second
run worked on a tree that the first one's merge changes), and a board that costs more than
anyone meant to spend. So the plan reads what each card would touch — the files its past runs
committed (commits carrying its `Card:` trailer, and the commits its runs recorded) and the
files its text names — and warns about every pair that overlaps; and it schedules cards only
while the sum of their cost budgets fits the board budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from cardrunner.card.card import Card, CardError, find_cards, load_card
from cardrunner.config.settings import Settings
from cardrunner.tools.branches import BranchRepo, CardHistory

_PATHLIKE = re.compile(r"[\w.-]*[\w-](?:/[\w.-]+)*/?")
_COMMANDS = re.compile(r"```.*?```|`[^`\n]*\s[^`\n]*`", re.S)
"""Fenced blocks and code spans with a space: command lines (`python scripts/build.py`)."""


class PlanError(Exception):
    """The plan cannot be made as asked; the message says what to change."""


class Budget(BaseModel):
    """The limits one card's job runs with (the same keys as `[limits]`)."""

    max_rounds: int
    max_tokens: int
    max_cost_usd: float | None


class PlannedCard(BaseModel):
    """One matrix entry: everything a job needs to run its card and name its branch."""

    card: str
    slug: str
    branch: str
    title: str
    budget: Budget


class Conflict(BaseModel):
    """Two scheduled cards that would touch the same files: do not run them blindly at once."""

    cards: tuple[str, str]
    files: list[str]


class Skipped(BaseModel):
    """A selected card that is not scheduled, and why."""

    card: str
    why: str


class Plan(BaseModel):
    """What `cardrunner plan` prints; `include` is the shape a CI matrix reads."""

    include: list[PlannedCard]
    conflicts: list[Conflict]
    skipped: list[Skipped]
    budget_usd: float | None
    scheduled_usd: float | None


@dataclass
class Selection:
    """Which cards to consider: by path (files or folders), state and category."""

    paths: list[Path] = field(default_factory=list)
    states: list[str] = field(default_factory=lambda: ["New"])
    categories: list[str] = field(default_factory=list)
    budget_usd: float | None = None
    max_cost_usd: float | None = None
    """Each card's cost budget; `[limits] max_cost_usd` when not given."""
    defer_conflicts: bool = False
    """Schedule only the first of cards that overlap; the others wait for a later board run."""


async def make_plan(root: Path, settings: Settings, selection: Selection) -> Plan:
    """Select, read and schedule the cards; raises PlanError for a budget that cannot work."""
    cost = selection.max_cost_usd
    cost = cost if cost is not None else settings.limits.max_cost_usd
    if selection.budget_usd is not None and cost is None:
        raise PlanError(
            "a board budget needs a cost budget per card: set [limits] max_cost_usd in "
            "cardrunner.toml or pass --max-cost"
        )
    budget = Budget(
        max_rounds=settings.limits.max_rounds,
        max_tokens=settings.limits.max_tokens,
        max_cost_usd=cost,
    )
    cards, skipped = _select(root, settings, selection)
    repo = BranchRepo(root)
    tracked = await repo.tracked_files() if await repo.is_repo() else []
    history = await repo.card_history() if tracked else CardHistory()
    footprints = {
        c.path: await _footprint(repo, c, history, tracked, settings.cards) for c in cards
    }
    include: list[PlannedCard] = []
    kept: list[Card] = []
    spent = 0.0
    for card in cards:
        name = _rel(card.path, root)
        clash = next((k for k in kept if footprints[k.path] & footprints[card.path]), None)
        if selection.defer_conflicts and clash is not None:
            why = f"touches the same files as {_rel(clash.path, root)}; run it after that one"
            skipped.append(Skipped(card=name, why=why))
            continue
        if selection.budget_usd is not None and cost is not None:
            if spent + cost > selection.budget_usd + 1e-9:
                why = f"the board budget of ${selection.budget_usd:.2f} is reached"
                skipped.append(Skipped(card=name, why=why))
                continue
            spent += cost
        kept.append(card)
        include.append(_entry(card, name, budget))
    return Plan(
        include=include,
        conflicts=_conflicts(kept, footprints, root),
        skipped=skipped,
        budget_usd=selection.budget_usd,
        scheduled_usd=round(spent, 4) if selection.budget_usd is not None else None,
    )


def _entry(card: Card, name: str, budget: Budget) -> PlannedCard:
    return PlannedCard(
        card=name, slug=card.slug, branch=f"cards/{card.slug}", title=card.title, budget=budget
    )


def _select(root: Path, settings: Settings, sel: Selection) -> tuple[list[Card], list[Skipped]]:
    """The readable cards matching the selection, sorted by path; unreadable ones skipped."""
    paths: list[Path] = []
    for given in sel.paths or [root / settings.cards]:
        given = given if given.is_absolute() else root / given
        paths += find_cards(given, ".") if given.is_dir() else [given]
    states = {s.casefold() for s in sel.states}
    categories = {c.casefold() for c in sel.categories}
    cards: list[Card] = []
    skipped: list[Skipped] = []
    for path in sorted(set(paths)):
        try:
            card = load_card(path)
        except CardError as exc:
            skipped.append(Skipped(card=_rel(path, root), why=f"not a valid card: {exc}"))
            continue
        if states and card.state.casefold() not in states:
            continue
        if categories and (card.category or "").casefold() not in categories:
            continue
        cards.append(card)
    return cards, skipped


async def _footprint(
    repo: BranchRepo, card: Card, history: CardHistory, tracked: list[str], cards: str
) -> set[str]:
    """The files a card is likely to touch: its history and the paths its text names."""
    files = named_files(card.text, tracked)
    for sha in history.commits.get(card.slug, []):
        files |= history.files[sha]
    recorded = [r.commit for r in card.records if r.commit]
    files |= await repo.files_of([c for c in recorded if c not in history.files])
    return {f for f in files if not PurePosixPath(f).is_relative_to(cards.strip("/") or ".")}


def named_files(text: str, tracked: list[str]) -> set[str]:
    """Tracked files a card's text names: by path, by folder (`src/ui/`) or by file name.

    A path inside a command line (a fenced block, or a code span with a space in it such as
    `python -m pytest tests/unit`) is something the card runs, not something it changes, so
    it does not count: otherwise every card naming the project's test command would overlap.
    """
    text = _COMMANDS.sub(" ", text)
    by_name: dict[str, list[str]] = {}
    for path in tracked:
        by_name.setdefault(PurePosixPath(path).name, []).append(path)
    found: set[str] = set()
    for match in _PATHLIKE.finditer(text):
        token = match.group(0).removeprefix("./").rstrip(".").rstrip("/")
        if "/" in token or match.group(0).endswith("/"):
            found.update(p for p in tracked if p == token or p.startswith(token + "/"))
        elif "." in token:
            found.update(by_name.get(token, []))
    return found


def _conflicts(cards: list[Card], footprints: dict[Path, set[str]], root: Path) -> list[Conflict]:
    out: list[Conflict] = []
    for i, first in enumerate(cards):
        for second in cards[i + 1 :]:
            shared = footprints[first.path] & footprints[second.path]
            if shared:
                pair = (_rel(first.path, root), _rel(second.path, root))
                out.append(Conflict(cards=pair, files=sorted(shared)))
    return out


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
