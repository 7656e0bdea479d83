"""A board plan: which cards to run now, as the matrix a CI engine fans out over.

A board is run as many jobs at once, each on its own branch, in the order `depends_on:` asks
(`board/order.py`: a card's entry names the cards it needs and its stage). Two things make that go wrong
silently: two cards that change the same files (their pull requests conflict, and the second
run worked on a tree that the first one's merge changes), and a board that costs more than
anyone meant to spend. So the plan reads what each card would touch — the files its past runs
committed (commits carrying its `Card:` trailer, and the commits its runs recorded) and the
files its text names — and warns about every pair that overlaps; and it schedules cards only
while the sum of their cost budgets fits the board budget.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from cardrunner.board.order import load_board, order_cards
from cardrunner.card.card import Card, CardError, card_key, card_slug, find_cards, load_card
from cardrunner.config.packages import PackageRefused, choose_package
from cardrunner.config.settings import Settings
from cardrunner.git.branches import BranchRepo, CardHistory

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
    needs: list[str] = []
    """The cards of this plan that must have run first (their branches are what it builds on)."""
    stage: int = 0
    """0: waits for nothing; n: after the cards of stage n-1 it needs."""
    package: str | None = None
    """The monorepo package whose commands test the card (config/packages.py); None: the root."""


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
    if selection.budget_usd is not None and not cost:  # 0 is no limit, as None
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
    ordered = order_cards(cards, load_board(root, settings.cards), root, settings.cards)
    names = _names([c.path for c in cards], root)
    skipped += [Skipped(card=names[c.path], why=why) for c, why in ordered.refused]
    cards = ordered.cards
    repo = BranchRepo(root)
    tracked = TrackedFiles(await repo.tracked_files() if await repo.is_repo() else [])
    history = await repo.card_history() if tracked.files else CardHistory()
    footprints = {
        c.path: await _footprint(repo, c, history, tracked, settings.cards) for c in cards
    }
    packages = {c.path: choose_package(settings, c.choices.package).name for c in cards}
    schedule = _Schedule(names, selection, budget, root, packages)
    for card in cards:
        needs = [names[d.path] for d in ordered.needs[card.path]]
        schedule.offer(card, footprints[card.path], needs, ordered.stage[card.path])
    skipped += schedule.skipped
    return Plan(
        include=schedule.include,
        conflicts=_conflicts(schedule.kept, footprints, names),
        skipped=skipped,
        budget_usd=selection.budget_usd,
        scheduled_usd=round(schedule.spent, 4) if selection.budget_usd is not None else None,
    )


@dataclass
class _Schedule:
    """Cards taken in order while the board budget lasts (and, if asked, while none overlap)."""

    names: dict[Path, str]
    selection: Selection
    budget: Budget
    root: Path
    packages: dict[Path, str | None]
    include: list[PlannedCard] = field(default_factory=list)
    kept: list[Card] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    spent: float = 0.0
    claimed: dict[str, str] = field(default_factory=dict)
    """File → the first scheduled card that touches it."""

    def offer(self, card: Card, footprint: set[str], needs: list[str], stage: int) -> None:
        name = self.names[card.path]
        board, cost = self.selection.budget_usd, self.budget.max_cost_usd
        waiting = [n for n in needs if n not in {e.card for e in self.include}]
        if waiting:
            why = f"waits for {waiting[0]}, which this plan does not schedule"
            self.skipped.append(Skipped(card=name, why=why))
            return
        owners = sorted({self.claimed[f] for f in footprint if f in self.claimed})
        if self.selection.defer_conflicts and owners:
            why = f"touches the same files as {owners[0]}; run it after that one"
            self.skipped.append(Skipped(card=name, why=why))
            return
        if board is not None and cost is not None:
            if self.spent + cost > board + 1e-9:
                why = f"the board budget of ${board:.2f} is reached"
                self.skipped.append(Skipped(card=name, why=why))
                return
            self.spent += cost
        for path in footprint:
            self.claimed.setdefault(path, name)
        self.kept.append(card)
        entry = _entry(card, name, self.budget, card_slug(card.path, self.root))
        update = {"needs": needs, "stage": stage, "package": self.packages[card.path]}
        self.include.append(entry.model_copy(update=update))


def _entry(card: Card, name: str, budget: Budget, slug: str) -> PlannedCard:
    return PlannedCard(
        card=name, slug=slug, branch=f"cards/{slug}", title=card.title, budget=budget
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
            skipped.append(Skipped(card=card_key(path, root), why=f"not a valid card: {exc}"))
            continue
        if states and card.state.casefold() not in states:
            continue
        if categories and (card.category or "").casefold() not in categories:
            continue
        try:  # a card no package's commands could test is never a job
            choose_package(settings, card.choices.package)
        except PackageRefused as exc:
            skipped.append(Skipped(card=card_key(path, root), why=str(exc)))
            continue
        cards.append(card)
    return cards, skipped


@dataclass
class TrackedFiles:
    """The files git tracks, indexed once per plan by file name (a card may name just that)."""

    files: list[str]
    by_name: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for path in self.files:
            self.by_name.setdefault(path.rpartition("/")[2], []).append(path)


async def _footprint(
    repo: BranchRepo, card: Card, history: CardHistory, tracked: TrackedFiles, cards: str
) -> set[str]:
    """The files a card is likely to touch: its history and the paths its text names."""
    files = named_files(card.text, tracked)
    slug = card_slug(card.path, repo.root)
    for sha in history.commits.get(slug, []):
        files |= history.files[sha]
    recorded = [*card.recorded_commits, *history.recorded.get(slug, [])]
    files |= await repo.files_of([c for c in recorded if c not in history.files])
    folder = cards.strip("/") + "/"
    return {f for f in files if not f.startswith(folder)}


def named_files(text: str, tracked: TrackedFiles) -> set[str]:
    """Tracked files a card's text names: by path, by folder (`src/ui/`) or by file name.

    A path inside a command line (a fenced block, or a code span with a space in it such as
    `python -m pytest tests/unit`) is something the card runs, not something it changes, so
    it does not count: otherwise every card naming the project's test command would overlap.
    """
    text = _COMMANDS.sub(" ", text)
    found: set[str] = set()
    for match in _PATHLIKE.finditer(text):
        token = match.group(0).removeprefix("./").rstrip(".").rstrip("/")
        if "/" in token or match.group(0).endswith("/"):
            found.update(p for p in tracked.files if p == token or p.startswith(token + "/"))
        elif "." in token:
            found.update(tracked.by_name.get(token, []))
    return found


def _conflicts(
    cards: list[Card], footprints: dict[Path, set[str]], names: dict[Path, str]
) -> list[Conflict]:
    """Every pair of cards sharing a file, in board order; by file, so a sparse board is cheap."""
    by_file: dict[str, list[int]] = {}
    for i, card in enumerate(cards):
        for path in footprints[card.path]:
            by_file.setdefault(path, []).append(i)
    shared: dict[tuple[int, int], list[str]] = {}
    for path, holders in by_file.items():
        for pair in itertools.combinations(holders, 2):
            shared.setdefault(pair, []).append(path)
    return [
        Conflict(cards=(names[cards[a].path], names[cards[b].path]), files=sorted(files))
        for (a, b), files in sorted(shared.items())
    ]


def _names(paths: list[Path], root: Path) -> dict[Path, str]:
    """Each card's path as the plan shows it: relative to the workspace, with slashes."""
    return {path: card_key(path, root) for path in paths}
