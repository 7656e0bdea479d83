"""`cardrunner lsp` and `cardrunner acp`: the two servers an editor starts on stdio.

Editors start plain `cardrunner lsp`, which cli/entry.py sends straight to the server without
this parser; the `lsp` verb here is what `cardrunner lsp --help` and the parser's list show.
`cardrunner acp` serves the Agent Client Protocol for editors' agent panels: Zed, the JetBrains
IDEs, Neovim (CodeCompanion) and Emacs (agent-shell) start it as an agent (docs/acp.md). Each
server, the SDK and the run are imported only when its verb runs.
"""

from __future__ import annotations

import argparse

from cardrunner.cli.exiting import EXIT_DONE, Subparsers, run_bounded
from cardrunner.config.paths import find_root


def add_parser(sub: Subparsers) -> None:
    """Register `lsp` and `acp`."""
    sub.add_parser("lsp", help="serve the language server on stdio (for editors)").set_defaults(
        verb=run_lsp
    )
    sub.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (Zed, JetBrains, CodeCompanion, agent-shell)",
        description="An ACP agent: a session is a card; /run CARD, /resume CARD, /cards. "
        "stdout carries only JSON-RPC; logs go to stderr. Ends when stdin closes.",
    ).set_defaults(verb=run_acp)


def run_lsp(args: argparse.Namespace) -> int:
    """Serve until the editor says exit (the server ends the process with its status)."""
    from cardrunner.lsp.server import serve  # the server's own start-up is measured alone

    serve()
    return EXIT_DONE


def run_acp(args: argparse.Namespace) -> int:
    """Serve one client until it closes stdin."""
    from cardrunner.acp.stdio import serve

    return run_bounded(serve(find_root))
