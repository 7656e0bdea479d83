"""A run as the editor's run view draws it: one entry per round, as structured data.

The readable account (account.py) is text for every editor; a client that draws the run itself
(VS Code's run view: a row per round, tool calls to expand, criteria that tick) needs the same
facts as fields — the model's narration of each round, its tool calls with their results, the
criteria as they stand, the cost against the budget. `Timeline` folds them from the same events
the account folds, so both always tell the same run. While the run goes on only the newest
`LIVE_ROUNDS` rounds are sent and results are cut to their last `RESULT_CHARS` characters, so an
answer at round 240 is no bigger than one at round 20 (docs/lsp-extensions.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cardrunner.agent import events as ev
from cardrunner.run.view import RunView

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
                pass  # the view (RunView) keeps what else the timeline shows

    def _call(self, event: ev.ToolFinished) -> None:
        if not self._rounds or self._rounds[-1].round != event.round:
            self._rounds.append(_Round(event.round, "", 0.0))
        call = _Call(event.tool_use_id, event.name, _arguments(event.arguments))
        call.result, call.is_error, call.ms = _tail(event.result), event.is_error, event.ms
        self._rounds[-1].calls.append(call)

    def answer(self, view: RunView, *, newest: int | None) -> dict[str, Any]:
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
            "criteria": [
                {"text": c.text, "status": c.status, "evidence": c.evidence} for c in view.criteria
            ],
        }
