"""`cardrunner acp`: serve the Agent Client Protocol on stdio, for editors' agent panels.

Zed, the JetBrains IDEs, Neovim (CodeCompanion) and Emacs (agent-shell) start it as an agent
(docs/acp.md). The SDK and the run are imported only when the verb runs.
"""

from __future__ import annotations

import argparse

from cardrunner.cli.exiting import Subparsers, run_bounded
from cardrunner.cli.root import find_root


def add_parser(sub: Subparsers) -> None:
    """Register `acp`."""
    sub.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (Zed, JetBrains, CodeCompanion, agent-shell)",
        description="An ACP agent: a session is a card; /run CARD, /resume CARD, /cards. "
        "stdout carries only JSON-RPC; logs go to stderr. Ends when stdin closes.",
    ).set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Serve one client until it closes stdin."""
    from cardrunner.acp.stdio import serve

    return run_bounded(serve(find_root))
