"""`cardrunner log RUN.jsonl|CARD.md`: a run told round by round, or a card's runs from git."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from cardrunner.card.card import CardError
from cardrunner.cli.exiting import EXIT_DONE, EXIT_USAGE, Subparsers, err
from cardrunner.cli.history import card_history
from cardrunner.cli.root import find_root
from cardrunner.config.display import shown
from cardrunner.run.account import summarize_log
from cardrunner.run.log import NotARunLog


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
        print(shown(summarize_log(args.log)))  # the log holds model text and tool output
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
