"""The verdict: the runner, not the model, decides whether a run is done — from what it saw.

The loop does not decide "done" by itself and knows no concrete tool: it hands the final answer
to a `Verdict` and ends with what that says. `RunVerdict` reads the ports that saw the work (the
review and commit, the runner's own build and test runs, the evidence ledger, the write area's
state) and holds the rules of docs/verification.md. When the model claims `done` too early, the
verdict objects: the loop sends the objection to the model and the run goes on, a bounded number
of times, so a model that skipped a step can still do it while budget remains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cardrunner.agent.ledger import LedgerEntry
from cardrunner.agent.reasons import FailureReason

RESULT_LINE = re.compile(r"^RESULT:\s*(?:(done)|failed(?::\s*(.*))?)\s*$")
"""The contract of the final answer's last line (instructions.md)."""


@dataclass(frozen=True)
class Outcome:
    """How a run ends: done (committed), verified (held, not committed), or failed with a reason."""

    status: Literal["done", "verified", "failed"]
    reason: FailureReason | None = None
    detail: str = ""
    outcome: Literal["committed", "not_committed", "nothing_to_change"] | None = None


@dataclass(frozen=True)
class Objection:
    """Done was claimed but does not hold: `message` goes to the model and the run goes on."""

    message: str
    reason: FailureReason
    """What the run ends with if the model cannot fix it."""
    attempt: int
    max_attempts: int


class Verdict(Protocol):
    """Judges the model's final answer; `commit` is the commit the run made, if any."""

    def judge(self, answer: str) -> Outcome | Objection: ...

    @property
    def commit(self) -> str | None: ...

    def ledger(self) -> list[LedgerEntry]: ...


class ReviewRecord(Protocol):
    """What the review saw: the last decision, the commit made, and the trees involved."""

    @property
    def last_decision(self) -> str | None: ...

    @property
    def committed(self) -> str | None: ...

    @property
    def reviewed_tree(self) -> str | None:
        """The write area the last review was about (and, once accepted, what was committed)."""


class ChecksRecord(Protocol):
    """The runner's own build and test runs."""

    def problem(self, tree: str) -> str | None:
        """Why build and tests do not hold on `tree`; None when they ran on it and passed."""

    def failure(self, tree: str) -> str | None:
        """Why the checks that ran on `tree` failed; None if they passed or did not run on it."""


class EvidenceRecord(Protocol):
    """The evidence ledger, as checked against the runner's record of the calls."""

    def missing_on(self, tree: str | None) -> list[int]:
        """Criteria without passing evidence gathered on `tree` (None: the write area now)."""

    def ledger(self) -> list[LedgerEntry]: ...


class AreaRecord(Protocol):
    """The write area's fingerprint now and at run start."""

    @property
    def current(self) -> str: ...

    @property
    def base(self) -> str: ...


Problem = tuple[FailureReason, str]


@dataclass
class RunVerdict:
    """Done only when committed after an accepted review, built and tested by the runner on the
    committed tree, and every criterion has grounded evidence from that tree."""

    review: ReviewRecord | None
    """None where a run has no commit tool (a loop driven directly, as in tests and benchmarks)."""
    evidence: EvidenceRecord
    require_evidence: bool = True
    checks: ChecksRecord | None = None
    area: AreaRecord | None = None
    max_objections: int = 2
    objections: int = field(default=0, init=False)

    @property
    def commit(self) -> str | None:
        return self.review.committed if self.review else None

    def ledger(self) -> list[LedgerEntry]:
        return self.evidence.ledger()

    def judge(self, answer: str) -> Outcome | Objection:
        lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
        match = RESULT_LINE.match(lines[-1]) if lines else None
        if match is not None and not match.group(1):
            rejected = self.review is not None and self.review.last_decision == "reject"
            reason: FailureReason = "rejected" if rejected else "model_failed"
            return Outcome("failed", reason, match.group(2) or "the model gave no reason")
        if match is None:
            last = lines[-1][:120] if lines else "(an empty message)"
            problems: list[Problem] = [
                (
                    "no_result_line",
                    "the last line of your final message must be exactly `RESULT: done` or "
                    f"`RESULT: failed: <one-line reason>`; it was: {last}",
                )
            ]
            ended = Outcome("failed")
        else:
            problems, ended = self._done()
        if not problems:
            return ended
        if self.objections < self.max_objections:
            self.objections += 1
            return Objection(
                _message(problems), problems[0][0], self.objections, self.max_objections
            )
        return Outcome("failed", problems[0][0], "; ".join(text for _, text in problems))

    def _done(self) -> tuple[list[Problem], Outcome]:
        """What stands between the claim and each way a run may end well."""
        r, area = self.review, self.area
        if r is not None and r.last_decision == "reject":
            return [("rejected", "the last review rejected the changes; address its reason")], (
                Outcome("failed")
            )
        if r is None or area is None or not self.require_evidence:
            # no commit tool (a loop driven directly), or the gate switched off: the model's word
            committed = r is not None and r.committed is not None
            return self._evidence_on(None), Outcome(
                "done", outcome="committed" if committed else None
            )
        if r.committed and r.reviewed_tree:
            return self._held_on(r.reviewed_tree, "the commit"), Outcome(
                "done", outcome="committed"
            )
        if r.last_decision == "no_commit" and r.reviewed_tree:
            return self._held_on(r.reviewed_tree, "the review"), Outcome(
                "verified", outcome="not_committed"
            )
        if area.current == area.base:  # the user's own code, as it was: nothing to build or commit
            return self._evidence_on(area.base), Outcome("verified", outcome="nothing_to_change")
        problems: list[Problem] = []
        if self.checks is not None and (failing := self.checks.failure(area.current)):
            problems.append(("tests_failed", failing))
        problems.append(
            (
                "unverified",
                "your changes are not committed: call git_commit (the runner builds and tests "
                "the code, then the user reviews it) before ending with RESULT: done",
            )
        )
        return problems, Outcome("failed")

    def _held_on(self, tree: str, since: str) -> list[Problem]:
        problems: list[Problem] = []
        assert self.area is not None
        if self.area.current != tree:
            problems.append(
                ("unverified", f"the write area changed after {since}; that change is unverified")
            )
        if self.checks is not None and (failing := self.checks.problem(tree)):
            problems.append(("tests_failed", failing))
        return problems + self._evidence_on(tree)

    def _evidence_on(self, tree: str | None) -> list[Problem]:
        if not self.require_evidence:
            return []
        missing = self.evidence.missing_on(tree)
        if not missing:
            return []
        head = f"done was claimed without passing evidence for criteria {missing}"
        lines = [head] + [_why(e) for e in self.evidence.ledger() if e.index in missing]
        return [("unverified", line) for line in lines]


def _why(entry: LedgerEntry) -> str:
    match entry.status:
        case "pending":
            return f"criterion {entry.index} has no evidence yet"
        case "failed":
            return f"criterion {entry.index} was reported as failing"
        case "stale":
            return f"the evidence for criterion {entry.index} is stale: {entry.stale}"
        case "verified":
            return (
                f"the evidence for criterion {entry.index} was gathered on other code than the "
                "code that ends the run; verify it again"
            )


def _message(problems: list[Problem]) -> str:
    """The one message the model gets: what is missing, and what to do about it."""
    items = "\n".join(f"- {text}" for _, text in problems)
    return (
        "[cardrunner] The run cannot end on this answer yet:\n"
        f"{items}\n"
        "Fix what is listed (cite calls made after your last change, quoting their results "
        "exactly), then end again. If a criterion cannot be met, end with RESULT: failed and say "
        "why."
    )
