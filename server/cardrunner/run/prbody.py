"""What a CI run says about itself: the pull request's body and the commit's evidence ledger.

On CI nobody watches the live view, so the pull request is where a reviewer learns what the
run did: the card, every acceptance criterion with the evidence the model reported for it,
rounds, tokens, cost and where the run log is. The same text is written when a run fails, so
the job's summary says why nothing was pushed. Evidence is model-written and the pull request
may be public: it is redacted like every other tool output.
"""

from __future__ import annotations

from dataclasses import dataclass

from cardrunner.card.card import Card
from cardrunner.config.secrets import redact
from cardrunner.run.view import Criterion, RunView

REVIEW_ON_PR = (
    "cardrunner accepted this change without a human review: on CI the review happens on this "
    "pull request. Nothing is merged by cardrunner."
)
_MARK = {"verified": "✅", "failed": "❌", "pending": "⏳"}


@dataclass(frozen=True)
class RunReport:
    """Everything the body shows, gathered once the run has ended."""

    card: Card
    card_path: str
    view: RunView
    branch: str
    model: str
    log_path: str
    pushed_to: str | None
    """The remote the branch went to; None when nothing was pushed."""
    why_not_pushed: str = ""


def pr_body(report: RunReport) -> str:
    """The Markdown body of the card's pull request (or of the job summary of a failed run)."""
    view = report.view
    title = f"## {report.card.title}"
    lines = [title if report.pushed_to else f"{title} — not pushed", ""]
    lines.append(
        f"Card `{report.card_path}` · branch `{report.branch}` · run `{view.run_id}` · "
        f"model `{report.model}`"
    )
    if not report.pushed_to:
        lines += ["", f"**Nothing was pushed:** {report.why_not_pushed}"]
    if report.card.description:
        lines += ["", *(f"> {line}".rstrip() for line in report.card.description.splitlines())]
    lines += ["", "### Acceptance criteria", ""]
    lines += [_criterion(i, c) for i, c in enumerate(view.criteria)]
    lines += [
        "",
        "### Run",
        "",
        "| result | rounds | tokens | cost |",
        "|---|---|---|---|",
        f"| {_result(view)} | {view.round} | {view.tokens:,} | ${view.cost_usd:.4f} |",
        "",
        f"Run log: `{report.log_path}` (uploaded with the job as an artifact).",
    ]
    if report.pushed_to:
        lines += ["", REVIEW_ON_PR]
    return "\n".join(lines) + "\n"


def evidence_ledger(view: RunView) -> str:
    """The criteria and their evidence as a paragraph for the commit message."""
    rows = [
        f"- [{'x' if c.status == 'verified' else ' '}] {i}. {_one_line(c.text)}"
        + (f" — {_one_line(c.evidence)}" if c.evidence else "")
        for i, c in enumerate(view.criteria, 1)
    ]
    return "Evidence:\n" + "\n".join(rows)


def with_ledger(message: str, view: RunView) -> str:
    """`message` with the evidence ledger before its trailers, unless it already carries it.

    A run's commit may already hold its evidence (as trailers written by the commit tool);
    then the message stays as it is rather than saying everything twice.
    """
    evidence = [_one_line(c.evidence) for c in view.criteria if c.evidence]
    if not view.criteria or (evidence and all(e in message for e in evidence)):
        return message
    body, _, trailers = message.strip().rpartition("\n\n")
    if not body or not all(":" in line for line in trailers.splitlines()):
        return f"{message.strip()}\n\n{evidence_ledger(view)}\n"
    return f"{body}\n\n{evidence_ledger(view)}\n\n{trailers}\n"


def _criterion(index: int, criterion: Criterion) -> str:
    line = f"- {_MARK[criterion.status]} **{index}.** {_one_line(criterion.text)}"
    if criterion.evidence:
        line += f"\n  - evidence: {_one_line(criterion.evidence)}"
    elif criterion.status == "pending":
        line += "\n  - evidence: none reported"
    return line


def _result(view: RunView) -> str:
    if view.state == "done":
        return "Done"
    return f"Failed ({view.reason})" if view.reason else "Failed"


def _one_line(text: str) -> str:
    return " ".join(redact(text).split())
