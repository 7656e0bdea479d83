"""`report_criterion`: the model states, per acceptance criterion, what it observed — and proves it.

"A build that compiles proves nothing", and neither does a sentence the model wrote. A report
names the tool calls it rests on (their tool_use ids) and quotes text from their results. The
runner checks each citation against its own record of the calls (`CallLog`): the call exists in
this run, the quote is in its result, and the call saw the write area as it is now. A claim that
fails is refused with a tool error naming the call and the quote, so the model can verify for
real. What is accepted goes into the evidence ledger (per criterion: claim, citations, the
result saved under the run's folder, later the commit it was checked on).

In a run that can see a running app (`Witnesses`, verify/observed.py), a criterion is about the
app unless the card marks it `(code)` or the model says why it can only be checked in the code
(`code_level`; the review then shows it plainly and a person must accept it). Evidence for an
app criterion must cite a call that observed the app, and what a browser saw going wrong on the
code (console errors, failed requests) refuses it. The screenshots of the verifying calls —
the cited ones, and the observing calls made since the previous report — are saved with it.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any, Literal

from cardrunner.agent.events import CriterionReported
from cardrunner.agent.ledger import Citation, LedgerEntry
from cardrunner.agent.review import Proof
from cardrunner.agent.toolpool import ToolContext, ToolError, ToolResult
from cardrunner.card.body import code_level
from cardrunner.tools.base import FunctionTool, schema
from cardrunner.verify.calls import CallLog, ObservedCall
from cardrunner.verify.observed import Witnesses, app_errors

CodeBy = Literal["", "card", "model"]
_SAFE_EXT = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class EvidenceSoFar:
    """What a resumed run had gathered; a new run's is empty."""

    reports: dict[int, CriterionReported] = field(default_factory=dict)
    """Accepted reports; they hold only if the write area is still the same."""
    committed: tuple[str, str] | None = None
    """(commit, tree) when the run had committed before the resume."""
    numbered_from: int = 1
    """The number `report_criterion` gives the first criterion in this run (`numbered_from`)."""


def numbered_from(tool_specs: list[dict[str, Any]] | None) -> int:
    """The number the run's own `report_criterion` gives the first criterion: 1, or 0 in a run
    logged before criteria were numbered from 1. A resume sends the logged tools again, so its
    model still counts as its tool told it to; reading the number from that tool, not from a
    version, keeps the runner and the model from ever counting differently."""
    for spec in tool_specs or []:
        if isinstance(spec, dict) and spec.get("name") == "report_criterion":
            index = (spec.get("input_schema") or {}).get("properties", {}).get("index", {})
            return 0 if isinstance(index, dict) and index.get("minimum") == 0 else 1
    return 1


@dataclass
class Evidence:
    """The accepted reports per criterion, checked against the call log.

    Kept by the criterion's place in the card (`index`, from 0, as lists are); whatever the
    model and people read numbers them from 1, in the card's order (`number`)."""

    criteria: list[str]
    calls: CallLog
    grounded: bool
    """Require citations (`require_evidence = false` turns the whole evidence gate off)."""
    artifacts: Path
    """Folder under the run's folder where cited results are saved."""
    root: Path
    """The workspace root, to store artifact paths relative to it."""
    so_far: InitVar[EvidenceSoFar] = EvidenceSoFar()
    witnesses: Witnesses = field(default_factory=Witnesses)
    """How this run can observe its app; none: every criterion is checked as before."""
    reports: dict[int, CriterionReported] = field(default_factory=dict, init=False)
    stale: dict[int, str] = field(default_factory=dict, init=False)
    """Criteria whose evidence the runner withdrew, and why (hand edits during review)."""
    commits: dict[int, str] = field(default_factory=dict, init=False)
    committed: tuple[str, str] | None = field(default=None, init=False)
    """(commit, tree) of the run's commit: evidence gathered on that tree was checked on it."""
    first: int = field(default=1, init=False)
    """The number the model's `report_criterion` gives the first criterion."""

    def __post_init__(self, so_far: EvidenceSoFar) -> None:
        self.reports.update(so_far.reports)
        self.first = so_far.numbered_from
        if so_far.committed is not None:
            self.checked_on(*so_far.committed)

    def number(self, index: int) -> int:
        """How the model's tool names the criterion at `index`: from 1 (from 0 in an old run)."""
        return index + self.first

    def named(self, indexes: list[int]) -> str:
        """`criterion 2`, `criteria 1, 3`: criteria as a message to the model names them."""
        numbers = ", ".join(str(self.number(i)) for i in indexes)
        return f"criteria {numbers}" if len(indexes) > 1 else f"criterion {numbers}"

    def missing(self) -> list[int]:
        """Criteria without passing evidence that holds on the write area as it is now."""
        return self.missing_on(None)

    def missing_on(self, tree: str | None) -> list[int]:
        """Criteria without passing evidence gathered on `tree` (None: the write area now)."""
        on = self.calls.current if tree is None else tree
        return [i for i in range(len(self.criteria)) if not self._holds(i, on)]

    def _holds(self, index: int, tree: str) -> bool:
        report = self.reports.get(index)
        if report is None or not report.passed or index in self.stale:
            return False
        return not self.grounded or report.tree == tree

    def mark_stale(self, indexes: list[int], why: str) -> None:
        for index in indexes:
            if index in self.reports:
                self.stale[index] = why

    def after_hand_edit(self, old: str, new: str, edited: list[str], why: str) -> list[int]:
        """The reviewer turned tree `old` into `new` by editing `edited`; the stale criteria.

        Evidence that rests only on reading files the reviewer did not touch still holds on the
        new tree; anything else (tests, the running app, the edited files) may not, and is
        withdrawn until the model verifies it again.
        """
        stale: list[int] = []
        for index, report in list(self.reports.items()):
            if report.tree != old or index in self.stale:
                continue
            if all(self._reads_other_file(c.call, edited) for c in report.cites) and report.cites:
                self.reports[index] = report.model_copy(update={"tree": new})
            else:
                stale.append(index)
        self.mark_stale(stale, why)
        return stale

    def _reads_other_file(self, call_id: str, edited: list[str]) -> bool:
        call = self.calls.calls.get(call_id)
        if call is None or call.name != "read_file" or not isinstance(call.arguments, dict):
            return False
        path = posixpath.normpath(str(call.arguments.get("path", "")))
        return path not in ("", ".") and all(
            path != e and not e.startswith(path + "/") for e in edited
        )

    def checked_on(self, commit: str, tree: str) -> None:
        """The commit `commit` has tree `tree`: evidence gathered on that tree was checked on it."""
        self.committed = (commit, tree)
        for index, report in self.reports.items():
            if report.tree == tree and index not in self.stale:
                self.commits[index] = commit

    def ledger(self) -> list[LedgerEntry]:
        """One entry per criterion, as it stands now."""
        return [self._entry(i, text) for i, text in enumerate(self.criteria)]

    def _entry(self, index: int, text: str) -> LedgerEntry:
        report = self.reports.get(index)
        if report is None:
            return LedgerEntry(index=index, criterion=text, status="pending")
        why = self.stale.get(index, "")
        if not why and self.grounded and report.passed and report.tree != self.calls.current:
            why = "the code changed after this evidence was gathered"
        status = "stale" if why else ("verified" if report.passed else "failed")
        level, by = self.level(index, report.code_level)
        return LedgerEntry(
            index=index,
            criterion=text,
            status=status,
            claim=report.evidence,
            cites=report.cites,
            commit=self.commits.get(index),
            stale=why,
            level=level,
            code_by=by,
            code_reason=report.code_level if by == "model" else "",
            screenshots=report.screenshots,
        )

    def proof(self) -> dict[int, Proof]:
        """Per criterion, where it was checked and its screenshots, for the review."""
        return {
            e.index: Proof(e.where().strip(), tuple(e.screenshots))
            for e in self.ledger()
            if e.where() or e.screenshots
        }

    def code_only(self) -> list[LedgerEntry]:
        """Verified criteria the model checked in the code only: a person must accept each."""
        return [e for e in self.ledger() if e.code_by == "model" and e.status == "verified"]

    def level(self, index: int, reason: str) -> tuple[Literal["", "app", "code"], CodeBy]:
        """Where criterion `index` is checked, and who made it code-level."""
        if not self.witnesses.has_app:
            return "", ""
        if code_level(self.criteria[index]):
            return "code", "card"
        return ("code", "model") if reason.strip() else ("app", "")

    def app_errors(self, tree: str) -> list[str]:
        """What went wrong in the app while calls observed it on `tree`, with the call."""
        found = [
            f"{error} ({call.describe()})"
            for call in sorted(self.calls.calls.values(), key=lambda c: c.seq)
            if call.before == call.after == tree and self.witnesses.watches(call)
            for error in app_errors(call.text)
        ]
        return list(dict.fromkeys(found))

    def tool(self) -> FunctionTool:
        return FunctionTool(
            name="report_criterion",
            description=(
                "Report the outcome of checking ONE acceptance criterion of the card. index: its "
                f"number in the card's order, the first being {self.first}. evidence: what you "
                "did and observed. cites: the calls it rests on, each {call: tool_use id, quote: "
                "copied exactly from its result}; evidence the runner cannot confirm is refused, "
                "saying what is missing." + self._app_rule()
            ),
            input_schema=schema(
                {
                    "index": {"type": "integer", "minimum": self.first},
                    "passed": {"type": "boolean"},
                    "evidence": {"type": "string", "minLength": 1},
                    "code_level": {"type": "string"},
                    "cites": {
                        "type": "array",
                        "maxItems": 10,
                        "items": schema(
                            {
                                "call": {"type": "string", "minLength": 1},
                                "quote": {"type": "string", "minLength": 1},
                            },
                            ["call", "quote"],
                        ),
                    },
                },
                required=["index", "passed", "evidence"],
            ),
            fn=self._report,
            timeout=15,
        )

    async def _report(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        number, passed, claim = args["index"], args["passed"], args["evidence"].strip()
        index = number - self.first
        if not 0 <= index < len(self.criteria):
            last = self.number(len(self.criteria) - 1)
            raise ToolError(
                f"There is no criterion {number}; the card has {len(self.criteria)}, numbered "
                f"{self.first} to {last} in the card's order."
            )
        cites = [(c["call"].strip(), c["quote"]) for c in args.get("cites", [])]
        reason = str(args.get("code_level", "")).strip()
        problems = self.problems(passed, cites)
        in_app = self.level(index, reason)[0] == "app"
        if not problems and passed and in_app:
            problems = self._app_problems(index, cites)
        if problems:
            raise ToolError(
                f"Evidence for criterion {number} refused; nothing was recorded.\n- "
                + "\n- ".join(problems)
            )
        report = CriterionReported(
            index=index,
            passed=passed,
            evidence=claim,
            cites=[self._citation(self.calls.calls[call], quote) for call, quote in cites],
            tree=self.calls.current,
            code_level=reason if self.witnesses.has_app else "",
            screenshots=self._screenshots([call for call, _ in cites], in_app),
        )
        self.reports[index] = report
        self.stale.pop(index, None)
        self.commits.pop(index, None)
        if self.committed and self.committed[1] == report.tree:  # verified again after the commit
            self.commits[index] = self.committed[0]
        ctx.emit(report)
        left = self.missing()
        rest = (
            f"still unverified: {self.named(left)}"
            if left
            else "all criteria have passing evidence"
        )
        return ToolResult(
            f"criterion {number} recorded as {'passed' if passed else 'failed'}; {rest}"
        )

    def problems(self, passed: bool, cites: list[tuple[str, str]]) -> list[str]:
        """What is wrong with these citations, one sentence each; empty when they hold."""
        if not self.grounded:
            return []
        if passed and not cites:
            return [
                "a passing criterion needs cites: the tool_use id of each call that shows it, "
                "with a quote copied exactly from that call's result"
            ]
        return [p for call, quote in cites if (p := self.calls.cite_problem(call, quote, passed))]

    def _app_rule(self) -> str:
        if not self.witnesses.has_app:
            return ""
        return (
            " Only a call that observed the running app verifies a criterion "
            f"({self.witnesses.describe()}); file reads and test runs show the code, not the app. "
            "If a criterion can only be checked in the code, set code_level to why (the user "
            "must accept it in the review)."
        )

    def _app_problems(self, index: int, cites: list[tuple[str, str]]) -> list[str]:
        """An app criterion rests on a call that observed the app, and the app showed no error."""
        seen, every = [self.calls.calls[call] for call, _ in cites], self.calls.calls.values()
        problems = self.witnesses.typed(
            [(c, q) for c, (_, q) in zip(seen, cites, strict=True)], every
        )
        why = [self.witnesses.refusal(c, every) for c in seen]
        if all(why):  # what a browser's call saw instead says more than that a read saw no app
            first = next(
                (w for c, w in zip(seen, why, strict=True) if self.witnesses.watches(c)), why[0]
            )
            problems.append(f"{self.named([index])} is about the running app, and {first}")
        problems += [
            f"the app showed an error while it was verified: {error}"
            for error in self.app_errors(self.calls.current)
        ]
        return problems

    def _screenshots(self, cited: list[str], in_app: bool) -> list[str]:
        """The images of the verifying calls: the cited ones, and for an app criterion the calls
        that observed the app on this code since the previous report (at most 6), saved under
        the run's folder."""
        ordered = sorted(self.calls.calls.values(), key=lambda c: c.seq)
        since = max((c.seq for c in ordered if c.name == "report_criterion"), default=-1)
        calls = [self.calls.calls[c] for c in dict.fromkeys(cited)]
        calls += [
            c
            for c in ordered
            if in_app
            and c.seq > since
            and c.id not in cited
            and c.images
            and self.witnesses.observed(c, ordered)
            and c.before == c.after == self.calls.current
        ]
        saved = [path for call in calls for path in self._save_images(call)]
        return saved[:6]

    def _citation(self, call: ObservedCall, quote: str) -> Citation:
        return Citation(
            call=call.id, tool=call.name, quote=quote, round=call.round, artifact=self._save(call)
        )

    def _save(self, call: ObservedCall) -> str | None:
        """Keep the cited result (text and screenshots) under the run's folder; its path."""
        try:
            self.artifacts.mkdir(parents=True, exist_ok=True)
            path = self.artifacts / f"{call.id}.txt"
            path.write_text(call.text, encoding="utf-8")
        except OSError:
            return None
        self._save_images(call)
        return _relative(path, self.root)

    def _save_images(self, call: ObservedCall) -> list[str]:
        """The call's images under the run's folder, named by the call; their paths."""
        saved: list[str] = []
        for n, image in enumerate(call.images, 1):
            ext = _SAFE_EXT.sub("", image.media_type.rsplit("/", 1)[-1])[:8] or "img"
            path = self.artifacts / f"{_SAFE_EXT.sub('_', call.id)}-{n}.{ext}"
            try:
                self.artifacts.mkdir(parents=True, exist_ok=True)
                path.write_bytes(base64.b64decode(image.data, validate=True))
            except (OSError, binascii.Error):
                continue
            saved.append(_relative(path, self.root))
        return saved


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
