"""`cardrunner log RUN.jsonl`: a run told round by round, read back from its log.

The log's lines are read back into the run's events (`log_events`) and folded into a `RunView`
like a live run's, so the counts printed here are the ones the live view and the card showed.
`Account` tells a log that is still growing (the editor's live run view): it reads only what
was appended since it last looked, so asking every round costs a round's lines, not the run's.

The editor's live run view (`cardrunner/runSummary`) asks for the text again on every
`cardrunner/runStatus`, several times a round. Told whole and read from the whole log each time,
the answer at round 240 was 20 times the one at round 10 (bench/client_cpu.py). So `RunAccounts`
keeps one `Account` per recently asked log, and while the run goes on the answer is its opening
and the newest `LIVE_LINES` lines — a live view is watched at its end, like `tail -f` — with one
line saying how many were left out. A run that has ended is told whole, and a client can ask
for everything at any time (`"full": true`).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, assert_never

from cardrunner.agent import events as ev
from cardrunner.run.log import EventReader, LogTail
from cardrunner.run.timeline import LIVE_ROUNDS, Timeline
from cardrunner.run.view import RunView


def summarize_log(path: Path) -> str:
    """A readable account of a run (what `cardrunner log` prints).

    Raises OSError when the file cannot be read and NotARunLog when it is something else.
    """
    account = Account(path)
    account.update()
    return account.text()


class Account:
    """The account of one run log, kept up to date as the log grows.

    `update` folds the lines appended since the last call; `lines` is then what
    `summarize_log` would print now, and `head` how many of them open it (the run's `start`),
    so a view can show the opening and the newest lines only. Safe to call from several
    threads (the editor reads logs off its event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        self._tail = LogTail(self.path)
        self._reader = EventReader()
        self._view = RunView(card_path=self.path, run_id="", title="")
        self._timeline = Timeline()
        self.lines: list[str] = []
        self.head = 0

    def update(self) -> None:
        """Read what was appended. Raises OSError when the file cannot be read and NotARunLog
        when it is something else; a log replaced by a shorter one is told again from the top."""
        with self._lock:
            if self.path.stat().st_size < self._tail.offset:
                self._start()
            for record in self._tail.read():
                event = self._reader.event(record)
                if event is None:
                    continue
                self._view.apply(event)
                self._timeline.apply(event)
                self.lines += describe(event, self._view)
                if isinstance(event, ev.RunStarted) and not self.head:
                    self.head = len(self.lines)

    def text(self, newest: int | None = None) -> str:
        """The account; with `newest`, its opening and only the newest lines, and how many were
        left out in between (the whole account is `cardrunner log` of the same file)."""
        with self._lock:
            lines, head = self.lines, self.head
            if newest is None or len(lines) - head <= newest + 1:
                return "\n".join(lines)
            left_out = len(lines) - head - newest
            gap = (
                f"… {left_out:,} earlier lines not shown while the run goes on "
                f"(all of them: cardrunner log {self.path})"
            )
            return "\n".join([*lines[:head], gap, *lines[-newest:]])

    def timeline(self, newest: int | None = None) -> dict[str, Any]:
        """The same run as structured rounds (timeline.py), the newest `newest` of them."""
        with self._lock:
            return self._timeline.answer(self._view, newest=newest)


def start_details(event: ev.RunStarted) -> list[str]:
    """What a run was told besides its card: `  instructions: AGENTS.md (1.2k)`, `  images: …`."""
    told = [f"  instructions: {', '.join(event.instructions)}"] * bool(event.instructions)
    return told + [f"  images: {', '.join(i['path'] for i in event.images)}"] * bool(event.images)


def _round_row(event: ev.RoundFinished) -> str:
    """One round: every priced token count (cache writes too, the dearest), so the row adds up
    to its cost."""
    u = event.usage
    return (
        f"round {event.round:>3}  {event.ms:>6} ms  in {u.input_tokens:>7,}  "
        f"cache r {u.cache_read_input_tokens:>7,} w {u.cache_creation_input_tokens:>7,}  "
        f"out {u.output_tokens:>6,}  "
        f"${event.cost_usd:.4f}  {event.stop_reason}  {', '.join(event.calls)}"
    )


def describe(event: ev.Event, view: RunView) -> list[str]:
    """The lines one logged event adds to the account (`view` already holds it)."""
    match event:
        case ev.RunStarted():
            head = f"run {event.run_id} · card {event.card} · model {event.model}"
            return [head, f"  tools: {', '.join(event.tools)}", *start_details(event)] + [
                f"  warning: {w}" for w in event.warnings
            ]
        case ev.RoundFinished():
            return [_round_row(event)]
        case ev.ToolFinished():
            first = event.result.strip().splitlines()[:1]
            mark = "✗" if event.is_error else "·"
            args = json.dumps(event.arguments, ensure_ascii=False)[:70]
            shown = first[0][:80] if first else ""
            return [f"   {mark} {event.name}({args}) {event.ms} ms → {shown}"]
        case ev.CriterionReported():
            verdict = "passed" if event.passed else "FAILED"
            cites = [
                f"     cites {c.tool} {c.call}: {json.dumps(c.quote)[:90]}" for c in event.cites
            ]
            return [f"   criterion {event.index + 1}: {verdict} — {event.evidence[:100]}", *cites]
        case ev.ChecksRan():
            return _checks_lines(event)
        case ev.BuildChecked(ok=False):
            return [f"   ✗ {event.tool}: {len(event.problems)} problem(s)"] + [
                f"     {w}" for w in event.why
            ]
        case ev.GateObjected():
            head = f"   done refused ({event.attempt}/{event.max_attempts}, {event.reason}):"
            why = [f"     {x}" for x in event.message.splitlines() if x.startswith("- ")]
            return [head, *why]
        case ev.ReviewDecided():
            return [f"   review: {event.decision} {event.reason} {event.commit or ''}".rstrip()]
        case ev.Compacted():
            change = f"{event.tokens_before:,} → {event.tokens_after:,}"
            return [f"   compaction ({event.kind}): {change} tokens"]
        case ev.RunFinished():
            return _result_lines(event, view)
        case ev.Announced():
            return [f"   told the model: {event.text[:120]}"]
        case (
            ev.RoundStarted()
            | ev.ToolStarted()
            | ev.ToolOutput()
            | ev.BuildChecked()
            | ev.ReviewRequested()
            | ev.Notice()
            | ev.CallObserved()
        ):
            return []  # transient, or shown by the lines around them
        case _:
            assert_never(event)


def _checks_lines(event: ev.ChecksRan) -> list[str]:
    """The runner's own build and tests: exits, the count, what they saw and why they failed."""
    runs = " · ".join(f"{c.kind} exit {c.exit_code}" for c in event.checks)
    count = f" · {event.tests_ran} tests ran" if event.tests_ran is not None else ""
    count += "".join(f" · tests not counted: {c.uncounted}" for c in event.checks if c.uncounted)
    mark = "✓" if event.ok else "✗"
    why = [f"     {w}" for c in event.checks for w in c.why]
    sees = [f"     {event.sees}"] if event.sees else []
    return [f"   {mark} runner's checks ({event.phase}): {runs}{count}", *sees, *why]


def _result_lines(event: ev.RunFinished, view: RunView) -> list[str]:
    """How the run ended, its totals and commit, and each criterion's line of the ledger."""
    status = {"done": "DONE", "verified": f"VERIFIED, {event.outcome} (not Done)"}.get(
        event.status, f"FAILED ({event.reason}: {event.detail})"
    )
    commit = f" · commit {event.commit[:10]}" if event.commit else ""
    ledger = [f"  criterion {e.index + 1}: {e.line()}" for e in event.ledger]
    return [f"result: {status} · {view.totals()}{commit}", *ledger]


LIVE_LINES = 60
"""Newest lines of a live run's account in the answer: about 20 rounds of two tool calls."""
KEPT_LOGS = 16
"""Accounts kept (the logs asked for most recently); one more is read from the top again."""


class RunAccounts:
    """One up-to-date `Account` per recently asked log."""

    def __init__(self) -> None:
        self._accounts: OrderedDict[Path, Account] = OrderedDict()
        self._lock = threading.Lock()

    def text(self, log_path: Path, *, live: bool, full: bool = False) -> str:
        """The account of `log_path` as the run view shows it now. Blocking (it reads the log):
        call it off the event loop. Raises OSError or NotARunLog as `summarize_log` does."""
        account = self._account(log_path)
        account.update()
        return account.text(None if full or not live else LIVE_LINES)

    def timeline(self, log_path: Path, *, live: bool) -> dict[str, Any]:
        """The run of `log_path` as structured rounds (the newest `LIVE_ROUNDS` while `live`).
        Blocking, and raising, as `text` is."""
        account = self._account(log_path)
        account.update()
        return account.timeline(LIVE_ROUNDS if live else None)

    def _account(self, log_path: Path) -> Account:
        with self._lock:
            account = self._accounts.pop(log_path, None) or Account(log_path)
            self._accounts[log_path] = account
            while len(self._accounts) > KEPT_LOGS:
                self._accounts.popitem(last=False)
            return account
