"""The CLI's live view: a subscriber that turns run events into terminal lines.

On a terminal one status line is redrawn in place (round n/max, tokens, cost, current tool,
elapsed); otherwise (CI, pipes) one plain line per round and per tool call. It never affects
the run; it only reads events. The state it shows is the run's `RunState`, the same fold the
editor and `cardrunner log` read, so the three never disagree on a count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from cardrunner.agent import events as ev
from cardrunner.record.account import start_details
from cardrunner.record.state import Criterion, RunState, elapsed, tokens_short
from cardrunner.terminal.approver import review_requested

_WHY_LINES = 4
"""Decisive lines shown under a failed build or test: the error, not the whole output."""


class LiveView:
    """Renders events; `write` receives text (usually sys.stderr.write)."""

    def __init__(self, write: Callable[[str], object], tty: bool, asks: bool = False) -> None:
        """`asks`: a `TerminalApprover` asks on the same terminal and shows the review's status
        line itself, in front of its question."""
        self._write = write
        self._tty = tty
        self._asks = asks
        self._started = time.monotonic()
        self.view = RunState(card_path=Path(), run_id="", title="")
        """The run's state; the card's path is not needed to show it."""
        self._thinking = False
        self._status_shown = False

    def status(self) -> str:
        v = self.view
        cache = f" · cache {tokens_short(v.cache_read_tokens)}" if v.cache_read_tokens else ""
        doing = v.tool or ("thinking…" if self._thinking else "")
        tool = f" · {doing}" if doing else ""
        return (
            f"round {v.round}/{v.max_rounds or '∞'} · {tokens_short(v.tokens)} tok{cache} · "
            f"{v.cost(2)}{tool} · {elapsed(time.monotonic() - self._started)}"
        )

    def _line(self, text: str) -> None:
        if self._tty and self._status_shown:
            self._write("\r\x1b[2K")
            self._status_shown = False
        self._write(text + "\n")

    def _redraw(self) -> None:
        if self._tty:
            self._write("\r\x1b[2K" + self.status())
            self._status_shown = True

    def show(self, event: ev.Event) -> None:
        """Fold `event` into the view, then print what it changed."""
        self.view.apply(event)
        match event:
            case ev.RunStarted():
                where = f", {event.checkout}" if event.checkout else ""
                card = f"{event.card}, {event.package}" if event.package else event.card
                head = f"▶ {event.title}  ({card}, model {event.model}, run {event.run_id}{where})"
                self._line("\n".join([head, *start_details(event)]))
            case ev.RoundStarted():
                self._thinking = True
                self._redraw()
            case ev.RoundFinished():
                self._round(event)
            case ev.ToolStarted() | ev.ToolOutput():
                self._redraw()
            case ev.ToolFinished():
                if event.is_error:
                    self._line(
                        f"  ✗ {event.name}: {event.result.splitlines()[0][:120] if event.result else ''}"
                    )
                self._redraw()
            case ev.CriterionReported():
                mark = "✓" if event.passed else "✗"
                self._line(f"  {mark} criterion {event.index + 1}: {event.evidence[:140]}")
            case ev.BuildChecked():
                if not event.ok:
                    self._line(f"  ✗ {event.tool}: {len(event.problems)} problem(s)")
                    for why in event.why[:_WHY_LINES]:
                        self._line(f"      {why}")
            case ev.ReviewRequested() if not self._asks:
                self._line(review_requested(len(event.files)))
            case ev.ReviewDecided():
                what = f"committed {event.commit[:10]}" if event.commit else event.reason
                self._line(f"  review: {event.decision} {what}".rstrip())
            case ev.Compacted():
                self._line(
                    f"  compacted ({event.kind}): {event.tokens_before:,} → {event.tokens_after:,} tokens"
                )
            case ev.Notice():
                self._line(f"  {event.level}: {event.message}")
            case ev.Announced():
                self._line(f"  told the model: {event.text}")
            case ev.ChecksRan():
                self._checks(event)
            case ev.GateObjected():
                first = event.message.splitlines()[1:2]
                why = first[0].lstrip("- ") if first else event.reason
                self._line(f"  ↺ done refused ({event.attempt}/{event.max_attempts}): {why}")
            case ev.CallObserved() | ev.ReviewRequested():
                pass  # a review requested: the asking approver shows the line itself
            case ev.RunFinished():
                self._line(summary(self.view, time.monotonic() - self._started))
            case _:
                assert_never(event)

    def _round(self, event: ev.RoundFinished) -> None:
        self._thinking = False
        for said in event.text.strip().splitlines()[:3] if event.calls else []:
            self._line(f"  » {said[:160]}")  # what the model wrote between tool calls
        if not self._tty:
            self._line(self.status() + (f" · {', '.join(event.calls)}" if event.calls else ""))
        self._redraw()

    def _checks(self, event: ev.ChecksRan) -> None:
        runs = " · ".join(f"{c.kind} exit {c.exit_code}" for c in event.checks)
        count = f" · {event.tests_ran} tests ran" if event.tests_ran is not None else ""
        count += "".join(
            f" · tests not counted ({c.uncounted}): a deleted test would not be noticed"
            for c in event.checks
            if c.uncounted
        )
        mark = "✓" if event.ok else "✗"
        self._line(f"  {mark} runner's checks ({event.phase}): {runs}{count}")
        if event.sees:
            self._line(f"    {event.sees}")
        for why in [w for c in event.checks for w in c.why][:_WHY_LINES]:
            self._line(f"      {why}")


def summary(view: RunState, seconds: float) -> str:
    """The run's last lines: how it ended, what it used, the commit it made."""
    match view.state:
        case "done" if view.unmerged_branch:
            head = f"■ WAITING FOR YOUR REVIEW on branch {view.unmerged_branch} (not on yours)"
        case "done":
            head = "■ DONE"
        case "verified":
            head = "■ VERIFIED, not committed"
        case _:
            head = f"■ FAILED: {view.reason}" + (f" — {view.detail}" if view.detail else "")
    tail = f" · commit {view.commit[:10]}" if view.commit else ""
    ledger = "".join(
        f"\n  criterion {i}: {c.status}{_ledger(c)}" for i, c in enumerate(view.criteria, 1)
    )
    return f"{head}\n  {view.totals()} · {elapsed(seconds)}{tail}{ledger}"


def _ledger(c: Criterion) -> str:
    on = f" on {c.commit[:10]}" if c.commit else ""
    why = f" ({c.stale})" if c.stale else ""
    quotes = "; ".join(f'{x.tool} {x.call}: "{x.quote[:60]}"' for x in c.cites)
    return on + why + (f" — {quotes}" if quotes else "")
