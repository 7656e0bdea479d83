"""`cardrunner demo [DIR]`: the whole product on a newcomer's machine, with no API key.

Creates a fresh git repository with the InvoiceApp and its three cards, then runs each card
through the real runner — real files, real builds and tests, the real UI server driving the app
— with the model's answers played from a transcript. Each review is shown (and asked on a
terminal unless `--yes`); at the end a table says what every run did and cost.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cardrunner.demo import CARDS, DemoError, create_workspace

TRANSCRIPTS = Path(__file__).parent / "transcripts"


@dataclass
class Row:
    card: str
    result: str
    rounds: int
    tool_calls: int
    tokens: int
    cost_usd: float
    seconds: float


def new_demo_folder() -> Path:
    """A new, empty folder under the system's temporary folder.

    Never the current folder: run inside a checkout, the demo would become a repository nested
    in the user's own.
    """
    try:
        return Path(tempfile.mkdtemp(prefix="cardrunner-demo-"))
    except OSError as exc:
        raise DemoError(f"cannot create a folder under {tempfile.gettempdir()}: {exc}") from exc


def transcript_for(card: str) -> Path:
    return TRANSCRIPTS / (Path(card).stem + ".json")


async def _run_one(root: Path, card: str, yes: bool) -> Row:
    from cardrunner.agent.review import Approver, AutoApprover
    from cardrunner.config.settings import load_settings
    from cardrunner.run.prepare import RunOptions
    from cardrunner.run.session import RunSession
    from cardrunner.terminal.approver import TerminalApprover
    from cardrunner.terminal.liveview import LiveView

    settings, problems = load_settings(root)
    if problems:
        raise DemoError("; ".join(str(p) for p in problems))
    approver: Approver = AutoApprover("accept") if yes else TerminalApprover(sys.stderr.write)
    options = RunOptions(
        root=root,
        card_path=root / card,
        settings=settings,
        approver=approver,
        replay=transcript_for(card),
    )
    view = LiveView(sys.stderr.write, sys.stderr.isatty())
    started = time.monotonic()
    row = Row(Path(card).stem, "failed: no result", 0, 0, 0, 0.0, 0.0)
    async for event in RunSession(options).events():
        view.show(event)
        if event.type == "result":
            result = "done" if event.status == "done" else f"failed: {event.reason}"
            tokens = event.usage.total
            row = Row(
                Path(card).stem,
                result,
                event.rounds,
                event.tool_calls,
                tokens,
                event.cost_usd,
                time.monotonic() - started,
            )
    return row


def table(rows: list[Row]) -> str:
    head = f"{'card':<32} {'result':<18} {'rounds':>6} {'tools':>5} {'tokens':>9} {'cost':>8} {'time':>6}"
    lines = [head, "─" * len(head)]
    for r in rows:
        lines.append(
            f"{r.card:<32} {r.result:<18} {r.rounds:>6} {r.tool_calls:>5} {r.tokens:>9,} "
            f"{'$' + format(r.cost_usd, '.3f'):>8} {r.seconds:>5.1f}s"
        )
    return "\n".join(lines)


def next_steps(root: Path) -> str:
    return f"""
The demo repository is {root}
  git -C {root} log --oneline          the three commits, each reviewed before it was made
  cardrunner log {root}/.cardrunner/runs/<run>.jsonl   what a run did, round by round

Open it in an editor:
  VS Code: install the cardrunner extension (client-vscode/), open {root}, open a card in cards/
           and click "▶ Run card" above its title.
  Neovim, Helix, Emacs, Zed …: start `cardrunner lsp` as the language server for Markdown files
           under cards/ (see the README); the same lenses, code actions and diagnostics appear.

Run a card with a real model (costs money — see the README):
  git -C {root} revert --no-edit HEAD   # bring the last gap back (or write a card of your own)
  export ANTHROPIC_API_KEY=...
  cardrunner run {root}/cards/validate-quantity-and-price.md
"""


def run_demo(folder: Path | None, *, yes: bool = False) -> int:
    """Create the demo repository and run its three cards. Returns the process exit status."""
    if not yes and not sys.stdin.isatty():
        sys.stderr.write(
            "cardrunner demo: no terminal to ask on, so each review is accepted as with --yes\n"
        )
        yes = True
    try:
        root = create_workspace(folder if folder is not None else new_demo_folder())
    except DemoError as exc:
        sys.stderr.write(f"cardrunner demo: {exc}\n")
        return 2
    sys.stderr.write(
        f"Created the demo repository {root}: an invoice app with three gaps, one card each.\n\n"
    )
    rows = [asyncio.run(_run_one(root, card, yes)) for card in CARDS]
    print(table(rows))
    print(
        "\n(tokens and cost are estimates for the configured model: the answers were played from transcripts)"
    )
    print(next_steps(root))
    return 0 if all(r.result == "done" for r in rows) else 1
