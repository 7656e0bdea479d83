"""`cardrunner plan`: the cards ready to run, as one line of JSON a CI matrix reads.

Imports stay inside the command, so registering it costs the other commands nothing. The JSON
goes to stdout and nothing else does, so a workflow can put it straight into a job
output; warnings (overlapping cards, skipped cards) go to stderr as into the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.cli.exiting import EXIT_DONE, EXIT_USAGE, Subparsers
from cardrunner.config.paths import find_root

if TYPE_CHECKING:
    from cardrunner.board.plan import Plan


def add_parser(sub: Subparsers) -> None:
    """Register `plan` and its options."""
    plan = sub.add_parser(
        "plan",
        help="list the cards ready to run as JSON for a CI matrix",
        description=(
            "Print the cards ready to run as one line of JSON: {include: [{card, slug, branch, "
            "title, budget, needs, stage, package}], conflicts, skipped, budget_usd, scheduled_usd}. "
            "A card comes after the cards its depends_on names (needs, stage), or is skipped "
            "with why. Cards that would touch the same files are reported as conflicts (stderr too)."
        ),
    )
    plan.add_argument(
        "paths", nargs="*", type=Path, help="cards or folders of cards (default: the cards folder)"
    )
    plan.add_argument(
        "--state",
        action="append",
        dest="states",
        metavar="STATE",
        help="select cards in this state (repeatable; default: New)",
    )
    plan.add_argument(
        "--category",
        action="append",
        dest="categories",
        default=[],
        metavar="CATEGORY",
        help="select cards of this category only (repeatable)",
    )
    plan.add_argument(
        "--budget-usd",
        type=float,
        metavar="USD",
        help="board budget: stop scheduling when the cards' cost budgets add up to it",
    )
    plan.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="each card's cost budget (default: [limits] max_cost_usd)",
    )
    plan.add_argument(
        "--defer-conflicts",
        action="store_true",
        help="schedule only the first of overlapping cards; the others wait for the next plan",
    )

    plan.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Print the plan for the workspace of the paths given; exit 2 on a configuration or budget
    problem."""
    root = find_root(args.paths[0] if args.paths else Path.cwd())
    from cardrunner.board.plan import PlanError, Selection, make_plan
    from cardrunner.config.loading import has_clash, load_settings

    settings, problems = load_settings(root)
    for problem in problems:
        sys.stderr.write(f"cardrunner: {problem}\n")
    if has_clash(problems):
        return EXIT_USAGE
    for budget in (args.budget_usd, args.max_cost):
        if budget is not None and budget < 0:
            sys.stderr.write("cardrunner: budgets cannot be negative\n")
            return EXIT_USAGE
    selection = Selection(
        paths=[p.resolve() for p in args.paths],
        states=args.states or ["New"],
        categories=args.categories,
        budget_usd=args.budget_usd,
        max_cost_usd=args.max_cost,
        defer_conflicts=args.defer_conflicts,
    )
    try:
        plan = asyncio.run(make_plan(root, settings, selection))
    except PlanError as exc:
        sys.stderr.write(f"cardrunner: {exc}\n")
        return EXIT_USAGE
    for line in warnings(plan):
        sys.stderr.write(f"cardrunner: warning: {line}\n")
    sys.stdout.write(plan.model_dump_json() + "\n")
    return EXIT_DONE


def warnings(plan: Plan) -> list[str]:
    """One line per overlap and per skipped card, for a human reading the job's log."""
    lines = [
        f"{c.cards[0]} and {c.cards[1]} both touch {_files(c.files)}: running them in "
        "parallel makes their pull requests conflict"
        for c in plan.conflicts
    ]
    return lines + [f"{s.card} not scheduled: {s.why}" for s in plan.skipped]


def _files(files: list[str], shown: int = 5) -> str:
    """The first few files of an overlap; the JSON has them all."""
    rest = len(files) - shown
    return ", ".join(files[:shown]) + (f" and {rest} more" if rest > 0 else "")
