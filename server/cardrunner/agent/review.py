"""The two ports that judge a run's work: a person's review (`Approver`) and the runner's `Verdict`.

Review before commit: the diff of everything the run changed goes to an approver first.

`git_commit` is the only tool that can commit. It builds the diff against the write area's
state at run start (files written by the model and files changed by commands alike), emits a
`ReviewRequested` event and awaits the injected `Approver`: the CLI prompt, the editor, or a
test fake. Accept commits the allowed paths with trailers; a rejection goes back to the model as
the tool's result and the run continues. Nothing is committed without an accept.

The verdict: the runner, not the model, decides whether a run is done. The loop does not decide "done" by itself and knows no concrete tool: it hands the final answer
to a `Verdict` and ends with what that says — an `Outcome`, or an `Objection` the loop sends to
the model before the run goes on. The production verdict, which reads the parts that saw the work,
is `run/verdict.py`'s `RunVerdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from cardrunner.card.record import FailureReason

if TYPE_CHECKING:  # the ledger's models are pydantic: the idle language server reads this module
    from cardrunner.agent.ledger import LedgerEntry


@dataclass(frozen=True)
class Proof:
    """What a reviewer sees of one criterion beside its evidence line."""

    checked: str = ""
    """"in the app", "in the code only (…)", or "" in a run without an app."""
    screenshots: tuple[str, ...] = ()
    """The screenshots its verifying calls took: files cardrunner saved under the run's
    folder, workspace-relative (never a path the model wrote)."""


@dataclass(frozen=True)
class ReviewRequest:
    """What the user reviews: the model's commit message and the diff since the run started."""

    run_id: str
    card_title: str
    card_path: Path
    root: Path
    message: str
    files: list[str]
    diff: str
    base_tree: str
    """The write area at run start, as a git tree id (the "before" side of the diff)."""
    hidden: list[str] = field(default_factory=list)
    """Files git ignores that the run created: in no diff and no commit, deleted on reject."""
    flagged: list[str] = field(default_factory=list)
    """Changed configuration (.gitignore, cardrunner.toml, .mcp.json, CI …), shown at the top."""
    warnings: list[str] = field(default_factory=list)
    """What the user must accept knowingly (fewer tests ran than at the start …)."""
    checks: str = ""
    """The runner's own build and test run on exactly this tree, in one line."""
    evidence: list[str] = field(default_factory=list)
    """The evidence ledger, one line per criterion."""
    proof: dict[int, Proof] = field(default_factory=dict)
    """Per criterion (0-based): where it was checked and what the app showed."""


@dataclass(frozen=True)
class HunkRef:
    """One hunk of the diff the reviewer was shown: the file (its name on disk, not git's
    quoted form) and the hunk's place in that file's part of it (0 = first `@@`). Always
    resolved against that same diff, never one taken after a hand edit."""

    path: str
    index: int


@dataclass(frozen=True)
class ReviewDecision:
    """accept (optionally dropping some files or single hunks, with why), reject (with
    why), or no_commit."""

    decision: Literal["accept", "reject", "no_commit"]
    reason: str = ""
    drop: list[str] = field(default_factory=list)
    drop_hunks: list[HunkRef] = field(default_factory=list)
    """Hunks to undo before committing; the rest of their files is kept."""
    acknowledged: bool = False
    """The user saw the request's warnings and accepts them (never set by `--yes`)."""


class Approver(Protocol):
    """Whoever decides: the editor, the terminal, or a test."""

    async def review(self, request: ReviewRequest) -> ReviewDecision: ...


class AutoApprover:
    """`--yes` (accept everything) or `--no-commit` (review, then never commit)."""

    def __init__(self, decision: Literal["accept", "no_commit"] = "accept") -> None:
        self.decision = decision
        self.requests: list[ReviewRequest] = []

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return ReviewDecision(self.decision)


class ScriptedApprover:
    """Answers from a list, in order (tests: reject once, then accept)."""

    def __init__(self, decisions: list[ReviewDecision]) -> None:
        self.decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return self.decisions.pop(0) if self.decisions else ReviewDecision("accept")


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
