"""`cardrunner lsp`: serve the language server on stdio.

Editors start plain `cardrunner lsp`, which cli/entry.py sends straight to the server without
this parser; this verb is what `cardrunner lsp --help` and the parser's list show.
"""

from __future__ import annotations

import argparse

from cardrunner.cli.exiting import EXIT_DONE, Subparsers


def add_parser(sub: Subparsers) -> None:
    """Register `lsp`."""
    sub.add_parser("lsp", help="serve the language server on stdio (for editors)").set_defaults(
        verb=run
    )


def run(args: argparse.Namespace) -> int:
    """Serve until the editor says exit (the server ends the process with its status)."""
    from cardrunner.lsp.server import serve  # the server's own start-up is measured alone

    serve()
    return EXIT_DONE
