"""The live state of one run, folded from its events: what every view of a run shows.

Lenses, progress, diagnostics and the status notification all read the same few facts (round,
tokens, cost, the tool running, each criterion, build problems, the result); `RunView.apply`
is the one place that derives them from the event stream.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cardrunner.agent.events import (
    BuildChecked,
    CriterionReported,
    Event,
    Problem,
    ReviewDecided,
    ReviewRequested,
    RoundFinished,
    RoundStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)

RunState = Literal["running", "review", "done", "failed"]


@dataclass
class Criterion:
    """One acceptance criterion as the run sees it: pending until the model reports on it."""

    text: str
    status: Literal["pending", "verified", "failed"] = "pending"
    evidence: str = ""


@dataclass
class RunView:
    """The live state of one run, folded from its events; what every view of a run shows."""

    card_path: Path
    run_id: str
    title: str
    model: str = ""
    """The model's name as the run reports it (`replay:<transcript>` for a replay)."""
    state: RunState = "running"
    round: int = 0
    max_rounds: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    tool: str | None = None
    reason: str | None = None
    detail: str = ""
    commit: str | None = None
    log_path: Path | None = None
    criteria: list[Criterion] = field(default_factory=list)
    problems: dict[str, list[Problem]] = field(default_factory=dict)
    """Build/test problems by path relative to the root; replaced at each build."""
    last_round_text: str = ""
    touched: set[str] = field(default_factory=set)
    """Files this run has written (paths as the model gave them), for overlap warnings."""

    @property
    def live(self) -> bool:
        return self.state in ("running", "review")

    def summary(self) -> str:
        """`round 7/60 · 31.2k tok · $0.18 · build_app` — the one line every view shows."""
        limit = f"/{self.max_rounds}" if self.max_rounds else ""
        parts = [
            f"round {self.round}{limit}",
            f"{_tokens(self.tokens)} tok",
            f"${self.cost_usd:.2f}",
        ]
        if self.tool:
            parts.append(self.tool)
        return " · ".join(parts)

    def apply(self, event: Event) -> None:
        """Fold one event into the view."""
        match event:
            case RunStarted():
                self.run_id, self.title, self.model = event.run_id, event.title, event.model
                self.max_rounds = int(event.limits.get("max_rounds") or 0)
                self.criteria = [Criterion(text) for text in event.criteria]
                self.round = event.resumed_from_round
            case RoundStarted():
                self.round, self.max_rounds = event.round, event.max_rounds
            case RoundFinished():
                self.round = event.round
                self.tokens, self.cost_usd = event.total_usage.total, event.total_cost_usd
                self.last_round_text = event.text
            case ToolStarted():
                self.tool = event.name
            case ToolFinished():
                self.tool = None
                path = event.arguments.get("path")
                if event.name == "write_file" and not event.is_error and isinstance(path, str):
                    self.touched.add(path)
            case CriterionReported() if 0 <= event.index < len(self.criteria):
                status: Literal["verified", "failed"] = "verified" if event.passed else "failed"
                self.criteria[event.index] = Criterion(
                    self.criteria[event.index].text, status, event.evidence
                )
            case BuildChecked():
                self.problems = {}
                for problem in event.problems:
                    self.problems.setdefault(problem.path, []).append(problem)
            case ReviewRequested():
                self.state = "review"
            case ReviewDecided():
                self.state = "running"
                self.commit = event.commit or self.commit
            case RunFinished():
                self.state = "done" if event.status == "done" else "failed"
                self.reason, self.detail = event.reason, event.detail
                self.commit = event.commit or self.commit
                self.tokens = event.usage.total
                self.cost_usd, self.round, self.tool = event.cost_usd, event.rounds, None
                self.problems = {}
            case _:
                pass


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def card_slug(path: Path) -> str:
    """The same slug `Card.slug` gives, without reading the card (for the run id up front)."""
    ascii_stem = unicodedata.normalize("NFKD", path.stem).encode("ascii", "ignore")
    return re.sub(r"[^a-z0-9]+", "-", ascii_stem.decode().lower()).strip("-") or "card"
