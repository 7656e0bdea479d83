"""The verdict: how a run the model ended is judged — the RESULT line, the review, the evidence.

The loop does not decide "done" by itself and knows no concrete tool: it hands the final answer
to a `Verdict` and ends with what that says. The run's session builds the verdict from the ports
that saw the work (the approver's last decision, the criteria's evidence), so what counts as proof
can grow without the loop changing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from cardrunner.agent.events import FailureReason

RESULT_LINE = re.compile(r"^RESULT:\s*(?:(done)|failed(?::\s*(.*))?)\s*$")
"""The contract of the final answer's last line (instructions.md)."""


@dataclass(frozen=True)
class Outcome:
    """How a run ends: `done`, or `failed` with one reason from the fixed list."""

    status: Literal["done", "failed"]
    reason: FailureReason | None = None
    detail: str = ""


class Verdict(Protocol):
    """Judges the model's final answer; `commit` is the commit the run made, if any."""

    def judge(self, answer: str) -> Outcome: ...

    @property
    def commit(self) -> str | None: ...


class ReviewRecord(Protocol):
    """What the review saw: the last decision (accept, reject, no_commit) and the commit made."""

    @property
    def last_decision(self) -> str | None: ...

    @property
    def committed(self) -> str | None: ...


class EvidenceRecord(Protocol):
    """Which acceptance criteria still lack passing evidence (0-based)."""

    def missing(self) -> list[int]: ...


@dataclass
class RunVerdict:
    """The rules of DESIGN.md: a RESULT line, no rejected review, evidence for every criterion."""

    review: ReviewRecord | None
    """None where a run has no commit tool (a loop driven directly, as in tests and benchmarks)."""
    evidence: EvidenceRecord
    require_evidence: bool = True

    @property
    def commit(self) -> str | None:
        return self.review.committed if self.review else None

    def judge(self, answer: str) -> Outcome:
        lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
        match = RESULT_LINE.match(lines[-1]) if lines else None
        rejected = self.review is not None and self.review.last_decision == "reject"
        if match is None:
            return Outcome("failed", "no_result_line", "the final answer has no RESULT line")
        if not match.group(1):
            reason: FailureReason = "rejected" if rejected else "model_failed"
            return Outcome("failed", reason, match.group(2) or "the model gave no reason")
        if rejected:
            return Outcome("failed", "rejected", "the last review rejected the changes")
        if self.require_evidence and (missing := self.evidence.missing()):
            detail = f"done was claimed without passing evidence for criteria {missing}"
            return Outcome("failed", "unverified", detail)
        return Outcome("done")
