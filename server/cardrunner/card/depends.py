"""Which cards a card waits for: `depends_on:` resolved against the board.

A dependency is named by the card's path (from the repository root, from the cards folder, or
from the card's own folder; `.md` may be left out) or by its title (any case). A card is
blocked while any of its dependencies is not Done, or names no card at all: the lens shows why
instead of ▶ Run, the CLI refuses (or asks), and `cardrunner plan` schedules it after them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cardrunner.card.card import Card, CardError, find_cards, load_card


@dataclass(frozen=True)
class Blocker:
    """One dependency that is not met: the name as the card gives it and the card it found."""

    named: str
    card: Card | None

    def why(self) -> str:
        """`waits for "Add login" (In Work)` or `depends on "x", which is no card`."""
        if self.card is None:
            return f'depends on "{self.named}", which is no card'
        return f'waits for "{self.card.title}" ({self.card.state})'


def resolve(named: str, card: Card, board: Sequence[Card], root: Path, cards: str) -> Card | None:
    """The card on `board` that `named` means, for the card `card` (None: none does)."""
    text = named.strip()
    stems = [text] if text.lower().endswith((".md", ".markdown")) else [text, f"{text}.md"]
    places = [root, root / cards, card.path.parent]
    wanted = {(place / stem).resolve() for place in places for stem in stems}
    for other in board:
        if other.path.resolve() in wanted:
            return other
    titled = [o for o in board if o.title.casefold() == text.casefold()]
    return titled[0] if len(titled) == 1 else None


def blockers(card: Card, board: Sequence[Card], root: Path, cards: str = "cards") -> list[Blocker]:
    """The dependencies of `card` that are not Done (a card naming itself counts as unmet)."""
    out: list[Blocker] = []
    for named in card.depends_on:
        found = resolve(named, card, board, root, cards)
        if found is None or found.path.resolve() == card.path.resolve() or found.state != "Done":
            out.append(Blocker(named, found))
    return out


def load_board(root: Path, folder: str) -> list[Card]:
    """Every readable card of the workspace: what `depends_on:` may name."""
    board: list[Card] = []
    for path in find_cards(root, folder):
        try:
            board.append(load_card(path))
        except CardError:
            continue
    return board


def blocked_reason(found: Iterable[Blocker]) -> str:
    """The blockers as one line: `waits for "A" (New); waits for "B" (In Work)`."""
    return "; ".join(b.why() for b in found)
