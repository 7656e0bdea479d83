"""`cardrunner demo [DIR]`: create the demo repository and run its cards, no API key needed."""

from __future__ import annotations

import argparse
from pathlib import Path

from cardrunner.cli.exiting import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Register `demo` and its options."""
    demo = sub.add_parser("demo", help="create the demo repository and run its cards (no API key)")
    demo.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="a new or empty folder for the demo repository (default: a new folder under the "
        "system's temporary folder, printed)",
    )
    demo.add_argument(
        "--yes", action="store_true", help="accept every review without asking (as without a tty)"
    )
    demo.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Play the demo; the exit status is the demo's."""
    from cardrunner.demo.tour import run_demo

    return run_demo(args.dir, yes=args.yes)
