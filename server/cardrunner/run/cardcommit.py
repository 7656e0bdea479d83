"""A card's state after a run: where it is written, and its commit of its own in git.

Where the state is written is the `CardStore` a front end gives the run (card/card.py): the
file on disk (`DiskCardStore`), or the editor's buffer (the language server's,
lsp/core/cardstore.py).

A run writes the card's new `state`, `reason` and run record; left uncommitted, every run would
leave a modified card behind for the next `git commit -a` to pick up by accident. It is not
amended into the run's commit: the run record names that commit's sha, and a commit cannot
name itself. So a follow-up commit holds exactly the card's change. Failed runs get one too —
the board in git should say what happened, and a failure's reason and cost are history.

The commit also carries the run's record as trailers (`Result:`, `Rounds:`, `Cost-USD:`,
`Commit:`, … — `card.record.TRAILERS`): the card keeps only its last run, and `git log` of the
card is its history (`git.branches.BranchRepo.card_runs`).

Two kinds of run move no branch, by promise: a run whose changes were undone (cancelled, or
rejected and ended — "as if it never ran"), and `--no-commit`. Their card keeps its new state
as the one change in the checkout, and the next run's card commit carries it along.

The committed text is the card as the run read it at its start plus the same update the card
store applied, never the working file at the end: an editor's unsaved buffer or edits made
during the run never slip into the commit, they stay in the working tree.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from cardrunner.card.backlog import board_of
from cardrunner.card.card import Card, card_slug
from cardrunner.card.record import CardUpdate, RunRecord, record_trailers
from cardrunner.card.writeback import update_card_text
from cardrunner.git.repo import GitError, GitRepo
from cardrunner.run.workarea import UNDO_REASONS


def should_commit(update: CardUpdate) -> bool:
    """False for runs that promise to leave the user's branch where it was (undone runs)."""
    return not (isinstance(update.reason, str) and update.reason in UNDO_REASONS)


def commit_message(card: Card, update: CardUpdate, slug: str) -> str:
    """`card: <title> → Done` (or `→ Failed (reason)`), with the card (`slug`, its identity)
    and the run's record as trailers."""
    reason = update.reason if isinstance(update.reason, str) else ""
    outcome = f"{update.state}" + (f" ({reason})" if reason else "")
    run_id = update.run.id if update.run is not None else None
    trailers = [("Card", slug), *(record_trailers(update.run) if update.run else [])]
    return (
        f"card: {card.title} → {outcome}\n\n"
        f"The card's state and run record after run {run_id}.\n\n"
        + "".join(f"{key}: {value}\n" for key, value in trailers)
    )


def with_record(message: str, record: RunRecord) -> str:
    """`message` with the run's record added to its trailer block (or as one), for a commit
    that holds the card's change along with the run's work (a CI run's one folded commit).
    Trailers it has already (`Run:`) are not repeated; a later one counts when read back."""
    lines = message.strip().splitlines()
    have = {line.strip() for line in lines}
    new = [f"{k}: {v}" for k, v in record_trailers(record) if f"{k}: {v}" not in have]
    body, _, block = message.strip().rpartition("\n\n")
    if body and all(":" in line for line in block.splitlines()):
        return message.strip() + "".join(f"\n{line}" for line in new) + "\n"
    return message.strip() + "\n\n" + "\n".join(new) + "\n"


async def commit_card_state(repo: GitRepo, rel: str, card: Card, update: CardUpdate) -> str:
    """Commit the card's new state (`rel`: its path in `repo`); returns a note for the user,
    "" when it simply worked or was not wanted."""
    if not should_commit(update):
        return ""
    if PurePosixPath(rel).is_absolute() or rel.startswith(".."):
        return f"the card {card.path} is outside the repository; its state was not committed"
    try:
        new = update_card_text(card.text, board=board_of(card.path), **update.text_arguments())
    except ValueError as exc:
        return f"the card cannot be updated ({exc}); its state was not committed"
    try:
        await repo.commit_content(
            rel, new.encode("utf-8"), commit_message(card, update, card_slug(card.path, repo.root))
        )
    except GitError as exc:
        return f"the card's state was written but not committed: {exc}"
    return ""
