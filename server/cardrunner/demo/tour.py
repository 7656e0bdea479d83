"""`cardrunner demo [DIR]`: the whole product on a newcomer's machine, with no API key.

Creates a fresh git repository with the InvoiceApp and its three cards, then runs each card
through the real runner — real files, real builds and tests, the real UI server driving the app
— with the model's answers played from a transcript. Each review is shown (and asked on a
terminal unless `--yes`); at the end a table says what every run did and cost.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cardrunner.card.record import usd
from cardrunner.demo import CARDS, DemoError, create_workspace, reset_write_area
from cardrunner.demo.editors import (
    editor_steps,
    head,
    leave_card_new,
    shell_words,
    this_cardrunner,
    write_vscode_settings,
)

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
    commit: str | None = None
    before: str = ""
    """The repository's commit before this run: what undoing the run goes back to."""
    refused: bool = False
    """The run was refused before it started (`config_error`): every next card would be too."""


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


NEEDED = (
    ("textual", "the demo app's UI toolkit"),
    ("pytest", "the demo app's test command"),
)
"""What the demo repository's commands import, with what each is for."""


def missing_pieces() -> list[str]:
    """The modules the demo needs that the interpreter running cardrunner cannot import.

    The demo's build, test and app commands run with this interpreter (`python` in their argv),
    so a missing module would otherwise surface mid-run as a tool error — and, worse, as a
    transcript that "no longer fits" instead of the install problem it is.
    """
    return [f"{name} ({why})" for name, why in NEEDED if importlib.util.find_spec(name) is None]


async def _run_one(root: Path, card: str, transcript: Path, yes: bool) -> Row:
    from cardrunner.agent.review import Approver, AutoApprover
    from cardrunner.config.loading import load_settings
    from cardrunner.run.options import RunOptions
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
        replay=transcript,
        trusted=True,  # the demo made this repository itself, from cardrunner's own files
    )
    view = LiveView(sys.stderr.write, sys.stderr.isatty(), not yes)
    started = time.monotonic()
    before = head(root)
    row = Row(Path(card).stem, "failed: no result", 0, 0, 0, 0.0, 0.0, before=before)
    async for event in RunSession(options).events():
        view.show(event)
        if event.type == "result":
            result = (
                f"failed: {event.reason}"
                if event.status == "failed"
                else "done"
                if event.status == "done"
                else f"verified, {event.outcome}"
            )
            row = Row(
                Path(card).stem,
                result,
                event.rounds,
                event.tool_calls,
                event.usage.total,
                event.cost_usd,
                time.monotonic() - started,
                event.commit,
                before,
                event.status == "failed" and event.reason == "config_error",
            )
    return row


def run_cards(root: Path, cards: Sequence[tuple[str, Path]], *, yes: bool) -> list[Row]:
    """Run each (card, transcript) in order; a failed card's leftovers are undone before the next.

    A failed run may keep its changes for the user to look at, but here the next card's run
    would refuse to start over them ("uncommitted changes"): one failure must stay one failure.
    A refusal (the sandbox cannot start, a setting is wrong) ends the demo: the next cards would
    be refused for the same reason, and the user would read the same message three times.
    """
    from cardrunner.config.loading import load_settings

    rows: list[Row] = []
    for card, transcript in cards:
        row = asyncio.run(_run_one(root, card, transcript, yes))
        rows.append(row)
        if row.refused:
            break
        if row.result != "done":
            paths = load_settings(root)[0].paths.write
            reset_write_area(root, paths)
            sys.stderr.write(f"  ({', '.join(paths)} put back as committed for the next card)\n\n")
    return rows


def table(rows: list[Row]) -> str:
    head = f"{'card':<32} {'result':<18} {'rounds':>6} {'tools':>5} {'tokens':>9} {'cost':>12} {'time':>6}"
    lines = [head, "─" * len(head)]
    for r in rows:
        lines.append(
            f"{r.card:<32} {r.result:<18} {r.rounds:>6} {r.tool_calls:>5} {r.tokens:>9,} "
            f"{usd(r.cost_usd, 3, estimate=True, short=True):>12} {r.seconds:>5.1f}s"
        )
    return "\n".join(lines)


def next_steps(root: Path, rows: list[Row], reviewed: bool, editors: str) -> str:
    """What to do next, in the words of what happened: no revert to suggest without a commit,
    each command as it will run on this machine."""
    done = sum(1 for r in rows if r.commit)
    how = "each reviewed on the terminal" if reviewed else "each accepted without asking (--yes)"
    commits = (
        f"the {done} card commit(s), {how}, and the card's state after each run"
        if done
        else "the cards' states after each run (no card made a commit)"
    )
    if rows[-1].commit:  # `_ready_for_editors` undid it
        commits += (
            f";\n{' ' * 39}then the last run reverted and `replay` set, so {CARDS[-1]} is New again"
        )
    me = shell_words(this_cardrunner())
    card = root / CARDS[-1]
    return f"""
The demo repository is {root}
  git -C {root} log --oneline          {commits}
  {me} log {root}/.cardrunner/runs/<run>.jsonl   what a run did, round by round
  {me} transcript <run>.jsonl -o my.json        a run as a transcript you can replay

{editors}

Run a card with a real model (costs money — see the README): delete the `replay` line from
{root / "cardrunner.toml"}, then
  export ANTHROPIC_API_KEY=...
  {me} run {card} --yes
"""


def run_demo(folder: Path | None, *, yes: bool = False) -> int:
    """Create the demo repository and run its three cards. Returns the process exit status."""
    missing = missing_pieces()
    if missing:
        sys.stderr.write(
            "cardrunner demo: a missing piece, not a failed card: the interpreter running "
            f"cardrunner ({sys.executable}) cannot import {', '.join(missing)}. Install "
            "cardrunner with its dependencies (see the README), then run the demo again.\n"
        )
        return 2
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
    rows = run_cards(root, [(card, transcript_for(card)) for card in CARDS], yes=yes)
    if rows[-1].refused:
        sys.stderr.write(
            "cardrunner demo: stopped: the other cards would be refused the same way\n"
        )
        return 1
    print(table(rows))
    print(
        "\n(tokens and cost are estimates for the configured model: the answers were played from transcripts)"
    )
    try:
        print(next_steps(root, rows, not yes, _ready_for_editors(root, rows[-1])))
    except DemoError as exc:
        sys.stderr.write(f"cardrunner demo: {exc}\n")
        return 1
    return 0 if all(r.result == "done" for r in rows) else 1


def _ready_for_editors(root: Path, last: Row) -> str:
    """Leave the last card New with `replay` set, and the editor settings; say how to open it."""
    if last.commit:
        leave_card_new(root, last.before, TRANSCRIPTS)
    settings = write_vscode_settings(root)
    return editor_steps(root, CARDS[-1], settings)
