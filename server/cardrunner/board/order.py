"""Which cards a card waits for (`depends_on:` resolved against the board), and a plan's order.

A dependency is named by the card's path (from the repository root, from the cards folder, or
from the card's own folder; `.md` may be left out) or by its title (any case). A card is
blocked while any of its dependencies is not Done, or names no card at all: the lens shows why
instead of ▶ Run, the CLI refuses (or asks), and `cardrunner plan` schedules it after them.

`cardrunner plan` fans cards out over CI jobs, so a card runs after the cards it depends on, or
not at all. A card whose `depends_on:` names a card that is not Done can be scheduled only after
that card, in the same plan: its entry then names what it needs (and the stage it belongs to: 0
for cards that wait for nothing, 1 for cards that wait for stage 0, …), so a workflow runs it
once the branch it builds on exists. A dependency the plan does not run, one that names no card,
and a cycle cannot be waited for: the plan says why and leaves the card out, and so every card
that waits for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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


@dataclass
class Ordered:
    """The cards in an order that keeps every dependency first, and those that cannot run."""

    cards: list[Card] = field(default_factory=list)
    needs: dict[Path, list[Card]] = field(default_factory=dict)
    """A scheduled card → the scheduled cards it waits for."""
    stage: dict[Path, int] = field(default_factory=dict)
    refused: list[tuple[Card, str]] = field(default_factory=list)


def order_cards(cards: Sequence[Card], board: Sequence[Card], root: Path, folder: str) -> Ordered:
    """`cards` (the plan's selection) ordered by their dependencies on `board`."""
    chosen = {c.path.resolve(): c for c in cards}
    needs: dict[Path, list[Card]] = {}
    why: dict[Path, str] = {}
    for card in cards:
        needs[card.path] = []
        for named in card.depends_on:
            dep = resolve(named, card, board, root, folder)
            if dep is None:
                why[card.path] = f'depends on "{named}", which is no card'
            elif dep.path.resolve() == card.path.resolve():
                why[card.path] = "depends on itself"
            elif dep.path.resolve() in chosen:
                needs[card.path].append(chosen[dep.path.resolve()])
            elif dep.state != "Done":
                why[card.path] = (
                    f'waits for "{dep.title}" ({dep.state}), which this plan does not run'
                )
    out = Ordered()
    _topological(cards, needs, why, out)
    return out


def _topological(
    cards: Sequence[Card], needs: dict[Path, list[Card]], why: dict[Path, str], out: Ordered
) -> None:
    """Kahn's order, stable in the selection's order; what waits on a refused card is refused
    too, and what is left at the end waits in a cycle."""
    left = list(cards)
    while True:
        _spread(left, needs, why)
        ready = [
            c for c in left if c.path not in why and all(d.path in out.stage for d in needs[c.path])
        ]
        if not ready:
            break
        for card in ready:
            out.cards.append(card)
            out.needs[card.path] = needs[card.path]
            deps = needs[card.path]
            out.stage[card.path] = 1 + max((out.stage[d.path] for d in deps), default=-1)
        left = [c for c in left if c.path not in out.stage]
    for card in left:
        out.refused.append((card, why.get(card.path, "its dependencies form a cycle")))


def _spread(left: list[Card], needs: dict[Path, list[Card]], why: dict[Path, str]) -> None:
    """A card waiting for a refused card is refused, naming the first one (to a fixed point)."""
    changed = True
    while changed:
        changed = False
        for card in left:
            blocked = [d for d in needs[card.path] if d.path in why]
            if card.path not in why and blocked:
                why[card.path] = f'waits for "{blocked[0].title}", which cannot run'
                changed = True
