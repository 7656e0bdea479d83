"""`cardrunner log RUN.jsonl|CARD.md`: a run told round by round, or a card's runs from git.

A card's runs are listed newest first. The card keeps only its last run; every committed run's
record is in the trailers of its card commit (`run/cardstore.py`). This reads them back
(`BranchRepo.card_runs`) so the history does not need a `git log` format string. A last run that
committed nothing (undone, `--no-commit`) is in the card only, and is shown first, marked so.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from cardrunner.card.card import CardError, card_slug, load_card
from cardrunner.card.record import RunRecord
from cardrunner.cli.exiting import EXIT_DONE, EXIT_USAGE, Subparsers, err
from cardrunner.config.paths import find_root
from cardrunner.config.secrets import shown
from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError
from cardrunner.record.account import log_account
from cardrunner.record.log import NotARunLog


def run_line(record: RunRecord) -> str:
    """`20261201-… done · 7 rounds · 41.2k tokens · $0.18 · commit 0123456789 · log …`."""
    result = (record.result or "?") + (f" ({record.reason})" if record.reason else "")
    parts = [f"{record.id or '?'}  {record.started or ''}".rstrip(), result]
    if record.rounds is not None:
        parts.append(f"{record.rounds} rounds")
    if record.tokens is not None:
        parts.append(f"{record.tokens / 1000:.1f}k tokens")
    if (cost := record.cost()) is not None:
        parts.append(cost)
    if record.commit:
        parts.append(
            f"commit {record.commit[:10]}" + (f" on {record.branch}" if record.branch else "")
        )
    if record.log:
        parts.append(f"log {record.log}")
    return " · ".join(parts)


async def card_history(card_path: Path, root: Path) -> list[str]:
    """The lines `cardrunner log CARD.md` prints; raises CardError for a card it cannot read."""
    card = await asyncio.to_thread(load_card, card_path)
    try:
        runs = await BranchRepo(root).card_runs(card_slug(card.path, root))
    except GitError:
        runs = []  # not a repository: the card's own record is all there is
    lines = [run_line(r) for r in runs]
    last = card.last_run
    if last is not None and (not runs or last.id != runs[0].id):  # the card's record is short
        lines.insert(0, run_line(last) + " · not committed (in the card only)")
    header = f"{card.title} — {len(lines)} run{'s' if len(lines) != 1 else ''}, newest first"
    return [header, *(f"  {line}" for line in lines)]


def add_parser(sub: Subparsers) -> None:
    """Register `log` and its one argument."""
    log = sub.add_parser(
        "log",
        help="readable summary of a run log, or a card's runs (from git)",
        epilog="Exit status: 0 printed, 2 the file cannot be read or is not a run log or card.",
    )
    log.add_argument(
        "log",
        type=Path,
        metavar="RUN.jsonl|CARD.md",
        help="a file in .cardrunner/runs/, or a card: its runs, newest first, read from the "
        "trailers of its card commits",
    )
    log.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Print a run log's account, or a card's runs."""
    if args.log.suffix.lower() in (".md", ".markdown"):
        return _card_log(args.log)

    try:
        print(shown(log_account(args.log)))  # the log holds model text and tool output
    except OSError as exc:
        err(f"cardrunner: cannot read {args.log}: {exc}")
        return EXIT_USAGE
    except NotARunLog as exc:
        err(f"cardrunner: {exc}")
        return EXIT_USAGE
    return EXIT_DONE


def _card_log(card_path: Path) -> int:
    try:
        lines = asyncio.run(card_history(card_path, find_root(card_path)))
    except CardError as exc:
        why = exc.problems[0].message if exc.problems else str(exc)
        err(f"cardrunner: {card_path} is not a run log, and not a card: {why}")
        return EXIT_USAGE
    print(shown("\n".join(lines)))
    return EXIT_DONE
