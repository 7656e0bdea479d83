"""`cardrunner`: run a card headless, serve the language server, check cards, trust, run the demo.

Each verb is a module of its own with its parser beside its command (cli/run.py, cli/check.py,
...); this one only lists them.

Exit status of `run`: 0 the card ended Done on your branch (committed after an accepted review,
verified by the runner), 1 it ended Failed, 2 usage or configuration error, 3 verified but not
committed (`--no-commit`, or the criteria already held with nothing to change; the card goes to
Review), 4 the accepted commit did not apply to your branch and waits on its own branch for your
review (the card goes to Review).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from cardrunner.cli import check, ci, demo, importing, log, plan, run, serve, transcript, trust
from cardrunner.cli.exiting import EXIT_FAILED

VERBS = (run, serve, check, trust, demo, log, plan, transcript, importing, ci)
"""Every verb module, in the order `cardrunner --help` lists them."""


def _version() -> str:
    """The installed distribution's version (the wheel's), else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cardrunner")
    except PackageNotFoundError:
        from cardrunner import __version__

        return __version__


class _VersionAction(argparse.Action):
    """`--version`, looked up only when asked: reading the installed distribution's metadata
    costs `cardrunner lsp` ~10–20 ms of its start-up otherwise."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show the version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"cardrunner {_version()}")  # on stdout, as argparse's own version action does
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cardrunner",
        description=__doc__.splitlines()[0] if __doc__ else "",
        epilog="Exit status of run: 0 Done on your branch, 1 Failed, 2 usage or configuration "
        "error, 3 verified but not committed, 4 committed on a side branch that waits for your "
        "review. "
        "`cardrunner COMMAND --help` explains each command.",
    )
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        verb.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Every command, through the parser (`cardrunner lsp` alone skips it: cli/entry.py)."""
    args = _parser().parse_args(argv)
    try:
        status: int = args.verb(args)
    except KeyboardInterrupt:
        return EXIT_FAILED
    return status


if __name__ == "__main__":
    sys.exit(main())
