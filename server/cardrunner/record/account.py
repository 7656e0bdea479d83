"""A run told from its log: the text of `cardrunner log RUN.jsonl`, and its rounds as data.

The log's lines are read back into the run's events (`log_events`) and folded into a `RunState`
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

The text is for every editor; a client that draws the run itself (VS Code's run view: a row per
round, tool calls to expand, criteria that tick) needs the same facts as fields, one entry per
round — the model's narration of each round, its tool calls with their results, the criteria as
they stand, the cost against the budget. `Timeline` folds them from the same events the text
is told from, so both always tell the same run. While the run goes on only the newest
`LIVE_ROUNDS` rounds are sent and results are cut to their last `RESULT_CHARS` characters, so an
answer at round 240 is no bigger than one at round 20 (docs/lsp-extensions.md).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from cardrunner.agent import events as ev
from cardrunner.card.record import usd
from cardrunner.record.log import EventReader, LogTail
from cardrunner.record.state import Criterion, RunState

LIVE_ROUNDS = 30
"""Rounds a live run's timeline carries (the newest); an ended run's carries all."""
RESULT_CHARS = 4000
"""Characters of a tool call's result kept (its end: where a test run says how it went)."""
ARGUMENT_CHARS = 200


@dataclass
class _Call:
    tool_use_id: str
    name: str
    arguments: str
    result: str = ""
    is_error: bool = False
    ms: int | None = None

    def answer(self) -> dict[str, Any]:
        return {
            "id": self.tool_use_id,
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
            "isError": self.is_error,
            "ms": self.ms,
        }


@dataclass
class _Round:
    round: int
    text: str
    cost_usd: float
    calls: list[_Call] = field(default_factory=list)


def _arguments(arguments: dict[str, Any]) -> str:
    """The call's arguments on one short line (`{"path": "src/app.py"}`); `content` left out."""
    shown = {k: ("…" if k == "content" else v) for k, v in arguments.items()}
    text = json.dumps(shown, ensure_ascii=False)
    return text if len(text) <= ARGUMENT_CHARS else text[: ARGUMENT_CHARS - 1] + "…"


def _tail(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else "…" + text[-(RESULT_CHARS - 1) :]


class Timeline:
    """The rounds of one run, folded event by event (the account feeds it as it reads)."""

    def __init__(self) -> None:
        self._rounds: list[_Round] = []
        self.max_cost_usd: float = 0.0

    def apply(self, event: ev.Event) -> None:
        match event:
            case ev.RunStarted():
                self.max_cost_usd = float(event.limits.get("max_cost_usd") or 0.0)
            case ev.RoundFinished():
                self._rounds.append(_Round(event.round, event.text, event.cost_usd))
            case ev.ToolFinished():
                self._call(event)
            case _:
                pass  # the view (RunState) keeps what else the timeline shows

    def _call(self, event: ev.ToolFinished) -> None:
        if not self._rounds or self._rounds[-1].round != event.round:
            self._rounds.append(_Round(event.round, "", 0.0))
        call = _Call(event.tool_use_id, event.name, _arguments(event.arguments))
        call.result, call.is_error, call.ms = _tail(event.result), event.is_error, event.ms
        self._rounds[-1].calls.append(call)

    def answer(self, view: RunState, *, newest: int | None) -> dict[str, Any]:
        """The timeline as `cardrunner/runSummary` carries it (`newest`: rounds kept)."""
        rounds = self._rounds if newest is None else self._rounds[-newest:]
        return {
            "title": view.title,
            "model": view.model,
            "state": view.state,
            "reason": view.reason,
            "detail": view.detail,
            "commit": view.commit,
            "round": view.round,
            "maxRounds": view.max_rounds,
            "tokens": view.tokens,
            "costUsd": round(view.cost_usd, 4),
            "costEstimated": view.cost_estimated,
            "maxCostUsd": self.max_cost_usd or None,
            "omittedRounds": len(self._rounds) - len(rounds),
            "rounds": [
                {
                    "round": r.round,
                    "text": r.text,
                    "costUsd": round(r.cost_usd, 6),
                    "calls": [c.answer() for c in r.calls],
                }
                for r in rounds
            ],
            "criteria": [_criterion(c) for c in view.criteria],
        }


def _criterion(c: Criterion) -> dict[str, object]:
    """A criterion for the run view; its screenshots are workspace-relative files that
    cardrunner saved in the run's folder."""
    return {
        "text": c.text,
        "status": c.status,
        "evidence": c.evidence,
        "checked": c.where.strip(),
        "screenshots": list(c.screenshots),
    }


def log_account(path: Path) -> str:
    """A readable account of a run (what `cardrunner log` prints).

    Raises OSError when the file cannot be read and NotARunLog when it is something else.
    """
    account = Account(path)
    account.update()
    return account.text()


class Account:
    """The account of one run log, kept up to date as the log grows.

    `update` folds the lines appended since the last call; `lines` is then what
    `log_account` would print now, and `head` how many of them open it (the run's `start`),
    so a view can show the opening and the newest lines only. Safe to call from several
    threads (the editor reads logs off its event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        self._tail = LogTail(self.path)
        self._reader = EventReader()
        self._view = RunState(card_path=self.path, run_id="", title="")
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
        """The same run as structured rounds (`Timeline`), the newest `newest` of them."""
        with self._lock:
            return self._timeline.answer(self._view, newest=newest)


def start_details(event: ev.RunStarted) -> list[str]:
    """What a run was told besides its card: `  instructions: AGENTS.md (1.2k)`, `  images: …`."""
    told = [f"  instructions: {', '.join(event.instructions)}"] * bool(event.instructions)
    return told + [f"  images: {', '.join(i['path'] for i in event.images)}"] * bool(event.images)


def _round_row(event: ev.RoundFinished, replayed: bool) -> str:
    """One round: every priced token count (cache writes too, the dearest), so the row adds up
    to its cost — an estimate's as `~$0.0123 est.` (a replay, or the endpoint's usage unusable)."""
    u = event.usage
    cost = usd(event.cost_usd, 4, estimate=u.estimated or replayed, short=True)
    return (
        f"round {event.round:>3}  {event.ms:>6} ms  in {u.input_tokens:>7,}  "
        f"cache r {u.cache_read_input_tokens:>7,} w {u.cache_creation_input_tokens:>7,}  "
        f"out {u.output_tokens:>6,}  {cost}  {event.stop_reason}  {', '.join(event.calls)}"
    )


def describe(event: ev.Event, view: RunState) -> list[str]:
    """The lines one logged event adds to the account (`view` already holds it)."""
    match event:
        case ev.RunStarted():
            card = f"{event.card} · {event.package}" if event.package else event.card
            head = f"run {event.run_id} · card {card} · model {event.model}"
            return [head, f"  tools: {', '.join(event.tools)}", *start_details(event)] + [
                f"  warning: {w}" for w in event.warnings
            ]
        case ev.RoundFinished():
            return [_round_row(event, view.replayed)]
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
            code = [f"     in the code only, NOT in the app: {event.code_level[:100]}"]
            shots = [f"     screenshot {path}" for path in event.screenshots]
            head = f"   criterion {event.index + 1}: {verdict} — {event.evidence[:100]}"
            return [head, *cites, *(code if event.code_level else []), *shots]
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
    count += "".join(
        f" · tests not counted ({c.uncounted}): a deleted test would not be noticed"
        for c in event.checks
        if c.uncounted
    )
    mark = "✓" if event.ok else "✗"
    why = [f"     {w}" for c in event.checks for w in c.why]
    sees = [f"     {event.sees}"] if event.sees else []
    return [f"   {mark} runner's checks ({event.phase}): {runs}{count}", *sees, *why]


def _result_lines(event: ev.RunFinished, view: RunState) -> list[str]:
    """How the run ended, its totals and commit, and each criterion's line of the ledger."""
    status = {"done": "DONE", "verified": f"VERIFIED, {event.outcome} (not Done)"}.get(
        event.status, f"FAILED ({event.reason}: {event.detail})"
    )
    commit = f" · commit {event.commit[:10]}" if event.commit else ""
    ledger = [
        line
        for e in event.ledger
        for line in [
            f"  criterion {e.index + 1}: {e.line()}",
            *(f"    screenshot {path}" for path in e.screenshots),
        ]
    ]
    kept = [f"  the commit is kept on {event.kept_branch}"] if event.kept_branch else []
    return [f"result: {status} · {view.totals()}{commit}", *kept, *ledger]


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
        call it off the event loop. Raises OSError or NotARunLog as `log_account` does."""
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
