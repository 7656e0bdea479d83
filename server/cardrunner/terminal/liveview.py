"""The CLI's live view: a subscriber that turns run events into terminal lines.

On a terminal one status line is redrawn in place (round n/max, tokens, cost, current tool,
elapsed); otherwise (CI, pipes) one plain line per round and per tool call. It never affects
the run; it only reads events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import assert_never

from cardrunner.agent.events import (
    BuildChecked,
    Compacted,
    CriterionReported,
    Event,
    Notice,
    ReviewDecided,
    ReviewRequested,
    RoundFinished,
    RoundStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)


def tokens_short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"


class LiveView:
    """Renders events; `write` receives text (usually sys.stderr.write)."""

    def __init__(self, write: Callable[[str], object], tty: bool) -> None:
        self._write = write
        self._tty = tty
        self._started = time.monotonic()
        self._round = 0
        self._max = 0
        self._tokens = 0
        self._cost = 0.0
        self._cache = 0
        self._tool = ""
        self._status_shown = False

    def status(self) -> str:
        cache = f" · cache {tokens_short(self._cache)}" if self._cache else ""
        tool = f" · {self._tool}" if self._tool else ""
        return (
            f"round {self._round}/{self._max or '∞'} · {tokens_short(self._tokens)} tok{cache} · "
            f"${self._cost:.2f}{tool} · {elapsed(time.monotonic() - self._started)}"
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

    def show(self, event: Event) -> None:
        match event:
            case RunStarted():
                self._max = event.limits.get("max_rounds") or 0
                self._line(
                    f"▶ {event.title}  ({event.card}, model {event.model}, run {event.run_id})"
                )
            case RoundStarted():
                self._round, self._tool = event.round, "thinking…"
                self._redraw()
            case RoundFinished():
                self._tool = ""
                self._tokens = event.total_usage.total
                self._cache = event.total_usage.cache_read_input_tokens
                self._cost = event.total_cost_usd
                if not self._tty:
                    self._line(
                        self.status() + (f" · {', '.join(event.calls)}" if event.calls else "")
                    )
                self._redraw()
            case ToolStarted():
                self._tool = event.name
                self._redraw()
            case ToolFinished():
                if event.is_error:
                    self._line(
                        f"  ✗ {event.name}: {event.result.splitlines()[0][:120] if event.result else ''}"
                    )
                self._redraw()
            case CriterionReported():
                mark = "✓" if event.passed else "✗"
                self._line(f"  {mark} criterion {event.index}: {event.evidence[:140]}")
            case BuildChecked():
                if not event.ok:
                    self._line(f"  ✗ {event.tool}: {len(event.problems)} problem(s)")
            case ReviewRequested():
                self._line(f"  ⏸ review requested: {len(event.files)} file(s)")
            case ReviewDecided():
                what = f"committed {event.commit[:10]}" if event.commit else event.reason
                self._line(f"  review: {event.decision} {what}".rstrip())
            case Compacted():
                self._line(
                    f"  compacted ({event.kind}): {event.tokens_before:,} → {event.tokens_after:,} tokens"
                )
            case Notice():
                self._line(f"  {event.level}: {event.message}")
            case RunFinished():
                self._line(summary(event, time.monotonic() - self._started))
            case _:
                assert_never(event)


def summary(r: RunFinished, seconds: float) -> str:
    head = (
        "■ DONE"
        if r.status == "done"
        else f"■ FAILED: {r.reason}" + (f" — {r.detail}" if r.detail else "")
    )
    tokens = r.usage.total
    tail = f" · commit {r.commit[:10]}" if r.commit else ""
    return (
        f"{head}\n  {r.rounds} rounds · {r.tool_calls} tool calls · {tokens:,} tokens "
        f"(cache read {r.usage.cache_read_input_tokens:,}) · ${r.cost_usd:.4f} · {elapsed(seconds)}{tail}"
    )
