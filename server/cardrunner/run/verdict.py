"""The verdict: the runner, not the model, decides whether a run is done — from what it saw.

The loop hands the final answer to its `Verdict` (agent/verdict.py) and ends with what that
says. `RunVerdict` is the production one: it reads the parts that saw the work (the commit
tool's review and commit, the runner's own build and test runs, the evidence ledger, the call
log's fingerprints of the write area) and holds the rules of docs/verification.md. When the
model claims `done` too early, the verdict objects: the loop sends the objection to the model
and the run goes on, a bounded number of times, so a model that skipped a step can still do it
while budget remains. `EvidenceVerdict` is the verdict of a loop driven without the commit
tool (the loop's tests, the benchmarks): the model's word, held against the evidence ledger.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cardrunner.agent.ledger import LedgerEntry
from cardrunner.agent.review import Objection, Outcome
from cardrunner.card.record import FailureReason
from cardrunner.tools.commit import CommitTool
from cardrunner.tools.evidence import Evidence
from cardrunner.verify.builds import RunnerChecks
from cardrunner.verify.calls import CallLog

RESULT_LINE = re.compile(r"^RESULT:\s*(?:(done)|failed(?::\s*(.*))?)\s*$")
"""The contract of the final answer's last line (instructions.md)."""

Problem = tuple[FailureReason, str]


@dataclass
class EvidenceVerdict:
    """Done on the model's word, held against the evidence ledger: a loop without a commit tool."""

    evidence: Evidence
    require_evidence: bool = True
    max_objections: int = 2
    objections: int = field(default=0, init=False)

    @property
    def commit(self) -> str | None:
        return None

    def ledger(self) -> list[LedgerEntry]:
        return self.evidence.ledger()

    def judge(self, answer: str) -> Outcome | Objection:
        lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
        match = RESULT_LINE.match(lines[-1]) if lines else None
        if match is not None and not match.group(1):
            reason: FailureReason = "rejected" if self._rejected() else "model_failed"
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

    def _rejected(self) -> bool:
        """Did the last review reject the changes?"""
        return False

    def _done(self) -> tuple[list[Problem], Outcome]:
        """What stands between the claim and each way a run may end well."""
        return self._evidence_on(None), Outcome("done")

    def _evidence_on(self, tree: str | None) -> list[Problem]:
        if not self.require_evidence:
            return []
        on = self.evidence.calls.current if tree is None else tree
        errors: list[Problem] = [
            ("unverified", f"the app showed an error while it was verified on this code: {e}")
            for e in self.evidence.app_errors(on)
        ]
        missing = self.evidence.missing_on(tree)
        if not missing:
            return errors
        head = f"done was claimed without passing evidence for {self.evidence.named(missing)}"
        ledger = self.evidence.ledger()
        lines = [head] + [
            _why(e, self.evidence.named([e.index])) for e in ledger if e.index in missing
        ]
        return [("unverified", line) for line in lines] + errors


@dataclass(kw_only=True)
class RunVerdict(EvidenceVerdict):
    """Done only when committed after an accepted review, built and tested by the runner on the
    committed tree, and every criterion has grounded evidence from that tree."""

    review: CommitTool
    """What the review saw: the last decision, the commit made, and the tree reviewed."""
    checks: RunnerChecks
    calls: CallLog
    """The write area's fingerprint now and at run start."""

    @property
    def commit(self) -> str | None:
        return self.review.committed

    def _rejected(self) -> bool:
        return self.review.last_decision == "reject"

    def _done(self) -> tuple[list[Problem], Outcome]:
        r, calls = self.review, self.calls
        if (card := r.outside.card) is not None and card.changed():
            why = (
                f"the card {card.rel} was changed during the run (something this run ran wrote "
                "it); it was put back as the run found it, and a run whose card changed under "
                "it cannot end Done"
            )
            return [("unverified", why)], Outcome("failed")
        if r.last_decision == "reject":
            return [("rejected", "the last review rejected the changes; address its reason")], (
                Outcome("failed")
            )
        if not self.require_evidence:  # the gate switched off: the model's word
            return [], Outcome("done", outcome="committed" if r.committed is not None else None)
        if r.committed and r.reviewed_tree:
            return self._held_on(r.reviewed_tree, "the commit"), Outcome(
                "done", outcome="committed"
            )
        if r.last_decision == "no_commit" and r.reviewed_tree:
            return self._held_on(r.reviewed_tree, "the review"), Outcome(
                "verified", outcome="not_committed"
            )
        if calls.current == calls.base:  # the user's own code, as it was: nothing to commit
            return self._evidence_on(calls.base), Outcome("verified", outcome="nothing_to_change")
        problems: list[Problem] = []
        if failing := self.checks.failure(calls.current):
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
        if self.calls.current != tree:
            problems.append(
                ("unverified", f"the write area changed after {since}; that change is unverified")
            )
        if failing := self.checks.problem(tree):
            problems.append(("tests_failed", failing))
        for entry in self.evidence.code_only():
            if entry.index not in self.review.code_level_accepted:
                problems.append(
                    (
                        "unverified",
                        f"{self.evidence.named([entry.index])} was checked in the code only, not in the "
                        "running app, and no person accepted that in the review: verify it in "
                        "the app, or call git_commit so the review shows it",
                    )
                )
        return problems + self._evidence_on(tree)


def _why(entry: LedgerEntry, named: str) -> str:
    """Why one criterion holds the run back; `named` is how the model's tool numbers it."""
    match entry.status:
        case "pending":
            return f"{named} has no evidence yet"
        case "failed":
            return f"{named} was reported as failing"
        case "stale":
            return f"the evidence for {named} is stale: {entry.stale}"
        case "verified":
            return (
                f"the evidence for {named} was gathered on other code than the "
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
