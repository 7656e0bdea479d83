"""The board: every card grouped by state, with what its run is doing — for every editor.

A Kanban board is the natural view of a folder of cards, and it must not be a VS Code
privilege. `cardrunner/board` answers with the columns New / In Work / Review / Done /
Failed, each card with its live round and cost, a waiting review, its last result and the
actions it offers now (the same commands as its lenses), so a client only renders.
`workspace/symbol` lists the same cards for editors that have a symbol picker and nothing
else: typing a state ("review", "in work") or words of a title finds and jumps to cards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from cardrunner.lsp.features.codelens import CardSituation, card_choices, last_reason

Column = Literal["New", "In Work", "Review", "Done", "Failed"]
COLUMNS: tuple[Column, ...] = ("New", "In Work", "Review", "Done", "Failed")
MANUAL_STATES: tuple[Column, ...] = ("New", "Done", "Failed")
"""States a person may set by hand; In Work and Review belong to runs."""


class _Wire(BaseModel):
    """camelCase on the wire, like the rest of the LSP surface."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class BoardRun(_Wire):
    """The card's live run (or its last run in this session)."""

    run_id: str
    state: str
    round: int
    max_rounds: int
    tokens: int
    cost_usd: float
    tool: str | None
    summary: str
    log_path: str | None
    cost_estimated: bool = False
    """The cost is an estimate, not a bill (a replayed run, or usage the endpoint did not
    report): the board marks it so, as `summary` does (`~$0.18 est.`)."""


class BoardReview(_Wire):
    """A review waiting for the user: it stays on the board until it is answered."""

    diff_path: str
    files: list[str]
    message: str


class BoardAction(_Wire):
    """A command the card offers now, ready for `workspace/executeCommand`."""

    title: str
    command: str
    arguments: list[Any]


class BoardCard(_Wire):
    uri: str
    path: str
    """Relative to the workspace root."""
    title: str
    state: Column
    """The column: the card's state, or what its live run says (In Work, Review)."""
    category: str | None
    line: int
    """0-based line of the title, where a jump lands."""
    run: BoardRun | None
    review: BoardReview | None
    last_reason: str | None
    """Why the last run stopped, when it failed."""
    problems: list[str]
    """Parse problems; a card with problems still shows, under New."""
    actions: list[BoardAction]
    depends_on: list[str] = []
    """The cards it depends on, as its front matter names them."""
    blocked: str | None = None
    """Why it waits: a dependency that is not Done."""
    choices: str = ""
    """What the card asks for its run: `model claude-haiku-5-5 · effort low · ≤ 10 rounds`."""
    forecast: str | None = None
    """What a run is likely to cost: `≈ $0.08–$0.31 a run (from 4 past runs of this card)`."""
    package: str = ""
    """The monorepo package whose commands test it: `package web (packages/web)`."""


class BoardColumn(_Wire):
    state: Column
    cards: list[BoardCard]


class Board(_Wire):
    columns: list[BoardColumn]
    running: int
    waiting_reviews: int


Situation = Callable[[Path], CardSituation]
Review = Callable[[Path], BoardReview | None]


def column_of(situation: CardSituation) -> Column:
    """Where the card stands now: a live run overrides the front matter.

    Review means a review this server can answer is waiting, not that the run said it asked
    for one: between the two the diff is still being written, and a Reject clicked then would
    find nothing to reject. Until then the card stays In Work."""
    if situation.reviewing:
        return "Review"
    if situation.live:
        return "In Work"
    card = situation.entry.card if situation.entry else None
    state = card.state if card else "New"
    return next((c for c in COLUMNS if c.lower() == state.strip().lower()), "New")


def board_card(path: Path, root: Path, situation: CardSituation, review: Review) -> BoardCard:
    entry = situation.entry
    card = entry.card if entry else None
    view = situation.view
    run = None
    if view is not None:
        run = BoardRun(
            run_id=view.run_id,
            state=view.state,
            round=view.round,
            max_rounds=view.max_rounds,
            tokens=view.tokens,
            cost_usd=round(view.cost_usd, 4),
            tool=view.tool,
            summary=view.summary(),
            log_path=str(view.log_path) if view.log_path else None,
            cost_estimated=view.cost_estimated,
        )
    actions = [
        BoardAction(title=c.title, command=c.command, arguments=list(c.arguments or []))
        for c in card_choices(path, situation)
    ]
    return BoardCard(
        uri=situation.uri,
        path=_relative(path, root),
        title=card.title if card else path.stem,
        state=column_of(situation),
        category=card.category if card else None,
        line=card.title_line if card else 0,
        run=run,
        review=review(path) if situation.reviewing else None,
        last_reason=last_reason(situation),
        problems=[p.message for p in entry.problems] if entry else [],
        actions=actions,
        depends_on=list(card.depends_on) if card else [],
        blocked=situation.blocked,
        choices=card.choices.describe() if card else "",
        forecast=situation.forecast,
        package=situation.package,
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def build_board(paths: Iterable[Path], root: Path, situation: Situation, review: Review) -> Board:
    """Every card in its column, cards sorted by title within a column."""
    cards = [board_card(p, root, situation(p), review) for p in paths]
    columns = [
        BoardColumn(
            state=state,
            cards=sorted((c for c in cards if c.state == state), key=lambda c: c.title.lower()),
        )
        for state in COLUMNS
    ]
    running = sum(1 for c in cards if c.state == "In Work" and c.run is not None)
    waiting = sum(1 for c in cards if c.review is not None)
    return Board(columns=columns, running=running, waiting_reviews=waiting)


def _container(card: BoardCard) -> str:
    if card.review is not None:
        return "Review · waiting for review"
    if card.run is not None and card.state == "In Work":
        return f"In Work · {card.run.summary}"
    if card.state == "Failed" and card.last_reason:
        return f"Failed · {card.last_reason}"
    return card.state


def workspace_symbols(board: Board, query: str) -> list[types.SymbolInformation]:
    """Cards whose title, state or category contain every word of `query` (any case)."""
    words = query.lower().split()
    out: list[types.SymbolInformation] = []
    for column in board.columns:
        for card in column.cards:
            haystack = f"{card.title} {_container(card)} {card.category or ''} {card.path}".lower()
            if all(word in haystack for word in words):
                at = types.Position(card.line, 0)
                out.append(
                    types.SymbolInformation(
                        name=card.title,
                        kind=types.SymbolKind.File,
                        location=types.Location(card.uri, types.Range(at, at)),
                        container_name=_container(card),
                    )
                )
    return out
