"""The `cardrunner` command's entry point: `cardrunner lsp` goes straight to the server.

Editors start `cardrunner lsp` and wait for its `initialize` answer, so that path loads neither
argparse nor the other commands (cli/main.py, ~4 ms: 1–2 % of that wait, docs/architecture.md);
anything else given — `cardrunner lsp --help` too — goes to `cli.main.main` and its parser.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given == ["lsp"]:
        from cardrunner.lsp.server import serve

        serve()  # ends the process with the LSP's exit status
        return 0
    from cardrunner.cli.main import main as cli_main

    return cli_main(given)
