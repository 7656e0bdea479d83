"""What a CI run says about itself: the pull request's body and the commit's evidence ledger.

On CI nobody watches the live view, so the pull request is where a reviewer learns what the
run did: the card, every acceptance criterion with the evidence the model reported for it,
rounds, tokens, cost and where the run log is. The same text is written when a run fails, so
the job's summary says why nothing was pushed. Evidence is model-written and the pull request
may be public: it is redacted like every other tool output.

Every text in the body that a model or a file wrote is data, never markup (`inert`), as
Renovate and Dependabot treat the release notes they quote: a mention (`@octocat`) would
notify someone, a closing keyword (`Fixes #1`) would close an issue on merge (it is rewritten
visibly, `Fixes issue 1`, by `card.record.unclosing`: the one `Fixes #N` of a body is the line
cardrunner writes for the issue the card was imported from), HTML (`<img>`)
and Markdown links or images would render or load a remote image. A zero-width space breaks
mentions and issue references; HTML and brackets are escaped; names go in code spans.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from cardrunner.card.card import Card
from cardrunner.card.record import unclosing
from cardrunner.config.secrets import redact
from cardrunner.record.state import Criterion, RunState
from cardrunner.sources.issues import issue_number

REVIEW_ON_PR = (
    "cardrunner accepted this change without a human review: on CI the review happens on this "
    "pull request. Nothing is merged by cardrunner."
)
_MARK = {"verified": "✅", "failed": "❌", "pending": "⏳"}
_ZWSP = "\u200b"
_SAFE_PATH = re.compile(
    r"(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(?:png|jpeg|jpg|gif|webp)"
)
"""A screenshot's path as cardrunner names it (run folder, call id, number): nothing a
Markdown link could be broken out of."""
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_ISSUE_REF = re.compile(r"(#|\bGH-)(?=\d)", re.IGNORECASE)
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "\\[", "]": "\\]"})


def inert(text: str) -> str:
    """`text` as Markdown that shows it and does nothing else: no mention, no issue closed or
    linked, no HTML, no link or image (the characters all stay visible)."""
    text = unclosing(text.translate(_HTML), note=False)  # visibly: `Fixes issue 1`
    return _ISSUE_REF.sub(lambda m: m.group(1) + _ZWSP, _MENTION.sub("@" + _ZWSP, text))


def code(text: str) -> str:
    """`text` as one inline code span, whatever backticks it holds."""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if "`" in text else f"`{text}`"


@dataclass(frozen=True)
class RunReport:
    """Everything the body shows, gathered once the run has ended."""

    card: Card
    card_path: str
    view: RunState
    branch: str
    model: str
    log_path: str
    pushed_to: str | None
    """The remote the branch went to; None when nothing was pushed."""
    why_not_pushed: str = ""


def pr_body(report: RunReport) -> str:
    """The Markdown body of the card's pull request (or of the job summary of a failed run)."""
    view = report.view
    title = f"## {inert(report.card.title)}"
    lines = [title if report.pushed_to else f"{title} — not pushed", ""]
    lines.append(
        f"Card {code(report.card_path)} · branch {code(report.branch)} · run {code(view.run_id)}"
        f" · model {code(report.model)}"
    )
    if not report.pushed_to:
        lines += ["", f"**Nothing was pushed:** {inert(_one_line(report.why_not_pushed))}"]
    if report.card.description:
        quoted = report.card.description.splitlines()
        lines += ["", *(f"> {inert(line)}".rstrip() for line in quoted)]
    lines += ["", "### Acceptance criteria", ""]
    lines += [_criterion(i, c) for i, c in enumerate(view.criteria, 1)]
    if any(c.screenshots for c in view.criteria):
        lines += ["", f"Screenshots: the run's folder, in the job's artifacts{_run_link()}."]
    lines += [
        "",
        "### Run",
        "",
        "| result | rounds | tokens | cost |",
        "|---|---|---|---|",
        f"| {_result(view)} | {view.round} | {view.tokens:,} | {view.cost(4)} |",
        "",
        f"Run log: {code(report.log_path)} (uploaded with the job as an artifact).",
    ]
    if report.pushed_to:
        lines += ["", REVIEW_ON_PR]
    if (number := issue_number(report.card.source)) is not None:
        lines += ["", f"Fixes #{number}"]  # the issue the card was imported from
    return "\n".join(lines) + "\n"


def evidence_ledger(view: RunState) -> str:
    """The criteria and their evidence as a paragraph for the commit message."""
    rows = [
        f"- [{'x' if c.status == 'verified' else ' '}] {i}. {_one_line(c.text)}"
        + (f" — {_one_line(c.evidence)}" if c.evidence else "")
        for i, c in enumerate(view.criteria, 1)
    ]
    return "Evidence:\n" + "\n".join(rows)


def with_ledger(message: str, view: RunState) -> str:
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
    line = f"- {_MARK[criterion.status]} **{index}.** {inert(_one_line(criterion.text))}"
    if criterion.where.strip():
        line += f" — checked {inert(_one_line(criterion.where))}"
    if criterion.evidence:
        line += f"\n  - evidence: {inert(_one_line(criterion.evidence))}"
    elif criterion.status == "pending":
        line += "\n  - evidence: none reported"
    shots = [code(path) for path in criterion.screenshots if _SAFE_PATH.fullmatch(path)]
    if shots:  # cardrunner's own file names (checked), never text a model wrote
        line += "\n  - screenshots: " + ", ".join(shots)
    return line


_SERVER = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def _run_link() -> str:
    """A link to the workflow run whose artifacts hold the screenshots, from the variables
    GitHub Actions sets (checked to be a plain https origin, owner/name and a number); none
    outside Actions. cardrunner writes it; no model text becomes a link."""
    server, repo = os.environ.get("GITHUB_SERVER_URL", ""), os.environ.get("GITHUB_REPOSITORY", "")
    run = os.environ.get("GITHUB_RUN_ID", "")
    if not (_SERVER.fullmatch(server) and _REPO.fullmatch(repo) and run.isdigit()):
        return ""
    return f" ([the workflow run]({server}/{repo}/actions/runs/{run}))"


def _result(view: RunState) -> str:
    if view.state == "done":
        return "Done"
    return f"Failed ({view.reason})" if view.reason else "Failed"


def _one_line(text: str) -> str:
    return " ".join(redact(text).split())
