"""The live state of one run, folded from its events: what every view of a run shows.

The editor's lenses, progress, diagnostics and status, the CLI's live view and `cardrunner log`
all read the same few facts (round, tokens, cost, the tool running, each criterion, build
problems, the result); `RunState.apply` is the one place that derives them from the event
stream, live or read back from a log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, assert_never

from cardrunner.card.record import usd

if TYPE_CHECKING:  # the events' models load with the first event, not in an idle server
    from cardrunner.agent import events as ev
    from cardrunner.agent.ledger import Citation

OUTPUT_TAIL = 40
"""Lines of a running command's output a view keeps (the live run view shows them)."""
RunPhase = Literal["running", "review", "done", "verified", "failed"]


@dataclass
class Criterion:
    """One acceptance criterion as the run sees it: pending until the model reports on it."""

    text: str
    status: Literal["pending", "verified", "failed", "stale"] = "pending"
    evidence: str = ""
    cites: list[Citation] = field(default_factory=list)
    commit: str | None = None
    """The commit the evidence was checked on."""
    stale: str = ""
    """Why the evidence no longer holds, when it does not."""
    screenshots: list[str] = field(default_factory=list)
    """What the verifying calls showed of the app: files cardrunner saved under the run's
    folder (workspace-relative)."""
    where: str = ""
    """` in the app`, or that it was checked in the code only (`LedgerEntry.where`)."""


@dataclass
class RunState:
    """The live state of one run, folded from its events; what every view of a run shows."""

    card_path: Path
    run_id: str
    title: str
    model: str = ""
    """The model's name as the run reports it (`replay:<transcript>` for a replay)."""
    instructions: list[str] = field(default_factory=list)
    """The project's instruction files in the run's system prompt (`AGENTS.md (1.2k)`)."""
    state: RunPhase = "running"
    round: int = 0
    max_rounds: int = 0
    tokens: int = 0
    """Every token so far, cached or not (`Usage.total`)."""
    cache_read_tokens: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    estimated: bool = False
    """The tokens and cost are cardrunner's count: the endpoint's report was missing or
    implausibly low (`Usage.estimated`); every view then says "estimate"."""
    tool: str | None = None
    reason: str | None = None
    detail: str = ""
    commit: str | None = None
    unmerged_branch: str | None = None
    """The accepted commit stayed on this branch (it did not apply to the user's)."""
    log_path: Path | None = None
    criteria: list[Criterion] = field(default_factory=list)
    problems: dict[str, list[ev.Problem]] = field(default_factory=dict)
    """Build/test problems by path relative to the root; replaced at each build."""
    why: list[str] = field(default_factory=list)
    """Why the last build or test failed (its decisive lines); empty once one passes."""
    last_round_text: str = ""
    touched: set[str] = field(default_factory=set)
    """Files this run has written (paths as the model gave them), for overlap warnings."""
    output: list[str] = field(default_factory=list)
    """The newest lines the running command printed (tests as they pass), `OUTPUT_TAIL` at most."""

    @property
    def live(self) -> bool:
        return self.state in ("running", "review")

    @property
    def replayed(self) -> bool:
        """Played from a transcript: its cost is what the table would have charged, nobody was
        billed it."""
        return self.model.startswith("replay:")

    @property
    def cost_estimated(self) -> bool:
        """The cost is an estimate, not a bill: the run was replayed, or the endpoint's usage
        could not be used (`estimated`). Every view that shows a cost says so, the same way."""
        return self.estimated or self.replayed

    def summary(self) -> str:
        """`round 7/60 · 31.2k tok · $0.18 · build_app` — the one line every view shows (an
        estimate's cost as `~$0.18 est.`)."""
        limit = f"/{self.max_rounds}" if self.max_rounds else ""
        parts = [
            f"round {self.round}{limit}",
            f"{tokens_short(self.tokens)} tok",
            self.cost(2, short=True),
        ]
        if self.tool:
            parts.append(self.tool)
        return " · ".join(parts)

    def live_line(self) -> str:
        """The summary plus the newest line the running command printed (progress shows it)."""
        last = next((line.strip() for line in reversed(self.output) if line.strip()), "")
        return f"{self.summary()} · {last[:100]}" if self.tool and last else self.summary()

    def totals(self) -> str:
        """`7 rounds · 12 tool calls · 41,200 tokens (cache read 31,900) · $0.0412`: the end
        of a run as the CLI and `cardrunner log` both print it."""
        return (
            f"{self.round} rounds · {self.tool_calls} tool calls · {self.tokens:,} tokens "
            f"(cache read {self.cache_read_tokens:,}) · {self.cost(4)}"
        )

    def cost(self, digits: int, *, short: bool = False) -> str:
        """`$0.0412`, or for an estimate (`cost_estimated`) `~$0.0412 (estimate)` (short:
        `~$0.0412 est.`)."""
        return usd(self.cost_usd, digits, estimate=self.cost_estimated, short=short)

    def apply(self, event: ev.Event) -> None:
        """Fold one event into the view."""
        from cardrunner.agent import events as ev  # loaded by whoever made the event

        match event:
            case ev.RunStarted():
                self.run_id, self.title, self.model = event.run_id, event.title, event.model
                self.instructions = list(event.instructions)
                self.max_rounds = int(event.limits.get("max_rounds") or 0)
                self.criteria = [Criterion(text) for text in event.criteria]
                self.round = event.resumed_from_round
            case ev.RoundStarted():
                self.round, self.max_rounds = event.round, event.max_rounds
            case ev.RoundFinished():
                self.round = event.round
                self.tokens, self.cost_usd = event.total_usage.total, event.total_cost_usd
                self.cache_read_tokens = event.total_usage.cache_read_input_tokens
                self.estimated = event.total_usage.estimated
                self.last_round_text = event.text
            case ev.ToolStarted():
                self.tool, self.output = event.name, []
            case ev.ToolOutput():
                self.output = (self.output + event.text.splitlines())[-OUTPUT_TAIL:]
            case ev.ToolFinished():
                self._tool_finished(event)
            case ev.CriterionReported():
                self._criterion(event)
            case ev.BuildChecked():
                self.problems, self.why = {}, event.why
                for problem in event.problems:
                    self.problems.setdefault(problem.path, []).append(problem)
            case ev.ChecksRan():
                self.why = [line for check in event.checks for line in check.why]
            case ev.ReviewRequested():
                self.state = "review"
            case ev.ReviewDecided():
                self.state = "running"
                self.commit = event.commit or self.commit
            case ev.RunFinished():
                self._finished(event)
            case (
                ev.Compacted()
                | ev.Notice()
                | ev.Announced()
                | ev.GateObjected()
                | ev.CallObserved()
            ):
                pass  # shown as they come; they change nothing a view keeps
            case _:
                assert_never(event)

    def _tool_finished(self, event: ev.ToolFinished) -> None:
        self.tool, self.tool_calls = None, self.tool_calls + 1
        path = event.arguments.get("path")
        if event.name == "write_file" and not event.is_error and isinstance(path, str):
            self.touched.add(path)

    def _criterion(self, event: ev.CriterionReported) -> None:
        if 0 <= event.index < len(self.criteria):
            status: Literal["verified", "failed"] = "verified" if event.passed else "failed"
            self.criteria[event.index] = Criterion(
                self.criteria[event.index].text,
                status,
                event.evidence,
                event.cites,
                screenshots=list(event.screenshots),
            )

    def _finished(self, event: ev.RunFinished) -> None:
        self.state = event.status
        for entry in event.ledger:
            if 0 <= entry.index < len(self.criteria):
                self.criteria[entry.index] = Criterion(
                    entry.criterion,
                    "pending" if entry.status == "pending" else entry.status,
                    entry.claim,
                    entry.cites,
                    entry.commit,
                    entry.stale,
                    list(entry.screenshots),
                    entry.where(),
                )
        self.reason, self.detail = event.reason, event.detail
        self.commit = event.commit or self.commit
        self.unmerged_branch = event.unmerged_branch
        self.tokens, self.cost_usd = event.usage.total, event.cost_usd
        self.cache_read_tokens = event.usage.cache_read_input_tokens
        self.estimated = event.usage.estimated
        self.round, self.tool_calls, self.tool = event.rounds, event.tool_calls, None
        self.problems = {}


def tokens_short(n: int) -> str:
    """`31.2k` for 31,234 tokens: how every view of a run writes a token count."""
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def elapsed(seconds: float) -> str:
    """`m:ss`, how a run's wall time is shown."""
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"
