"""Asking before `cardrunner run` starts over a card that is Done, or one that must wait.

Re-running a Done card spends money and may commit a second change for work that was accepted
once, so the CLI asks on a terminal. Without a terminal (CI, pipes) nobody can answer: the run is
refused unless `--yes` says up front that re-running is intended. A card whose `depends_on:` is
not Done is treated the same way: it would build on work that is not there yet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cardrunner.board.order import blocked_reason, blockers, load_board
from cardrunner.card.card import CardError, load_card, parse_card
from cardrunner.card.record import RunRecord


def done_summary(card_path: Path) -> str | None:
    """`'Done (last run 2026…, commit abc1234567)'` when the card is Done, else None."""
    try:
        text = card_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # the run itself reports an unreadable card
    card, _ = parse_card(text, card_path)
    if card is None or card.state != "Done":
        return None
    last = card.last_run or RunRecord()
    details = [f"last run {last.id}" if last.id else ""]
    details.append(f"commit {last.commit[:10]}" if last.commit else "")
    shown = ", ".join(d for d in details if d)
    return "Done" + (f" ({shown})" if shown else "")


def refuse_rerun(
    card_path: Path,
    *,
    yes: bool,
    tty: bool,
    ask: Callable[[str], str],
) -> str | None:
    """None when the run may start; otherwise the reason it may not (for stderr, exit 2)."""
    done = done_summary(card_path)
    if done is None or yes:
        return None
    if not tty:
        return (
            f"{card_path.name} is already {done}; pass --yes to run it again "
            "(there is no terminal to ask on)"
        )
    if _yes(ask, f"{card_path.name} is already {done}. Run it again? [y/N] "):
        return None
    return f"{card_path.name} was not run again (it stays Done)"


def _yes(ask: Callable[[str], str], question: str) -> bool:
    try:
        answer = ask(question)
    except (EOFError, OSError):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def waiting_for(card_path: Path, root: Path, cards: str) -> str | None:
    """Why the card must wait for its dependencies (None: it need not)."""
    try:
        card = load_card(card_path)
    except CardError:
        return None  # the run itself reports an unreadable card
    if not card.depends_on:
        return None
    found = blockers(card, load_board(root, cards), root, cards)
    return blocked_reason(found) if found else None


def refuse_blocked(
    card_path: Path,
    root: Path,
    cards: str,
    *,
    yes: bool,
    tty: bool,
    ask: Callable[[str], str],
) -> str | None:
    """None when the card may run now (or `yes` says to run it anyway); else the reason."""
    why = waiting_for(card_path, root, cards)
    if why is None or yes:
        return None
    if not tty:
        return (
            f"{card_path.name} {why}; pass --yes to run it anyway (there is no terminal to ask on)"
        )
    if _yes(ask, f"{card_path.name} {why}. Run it anyway? [y/N] "):
        return None
    return f"{card_path.name} was not run: it {why}"
