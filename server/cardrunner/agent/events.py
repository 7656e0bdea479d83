"""The typed events one run yields.

The loop knows nothing of editors, terminals or files: it yields these events and every front end
(the JSONL log, the CLI live view, the language server) subscribes to them. One discriminated union,
so subscribers can `match` and a type checker proves every case is handled.

Why a run fails is a fixed list (`FailureReason`, DESIGN.md) kept with the card's run record
(card/record.py), which holds no pydantic model: the editor's lenses read `RESUMABLE_REASONS`
there without loading these events in an idle language server.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cardrunner.agent.ledger import Citation, LedgerEntry
from cardrunner.card.record import FailureReason


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))


class Usage(BaseModel):
    """Token counts of one model response, as the Messages API reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    estimated: bool = False
    """The endpoint's report was missing or implausibly low, so the input is cardrunner's own
    count of what it sent (models/shaping.py): the cost is an estimate, never a measurement."""

    @property
    def total(self) -> int:
        """Every token that went in or came out, cached or not (the token budget counts these)."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            estimated=self.estimated or other.estimated,
        )


class RunStarted(_Event):
    """The run has its tools and limits and is about to ask the model for round 1."""

    type: Literal["start"] = "start"
    run_id: str
    card: str
    title: str
    model: str
    tools: list[str]
    limits: dict[str, Any]
    criteria: list[str]
    warnings: list[str] = []
    instructions: list[str] = []
    """The project's instruction files in the system prompt: `AGENTS.md (1.2k)`."""
    images: list[dict[str, str]] = []
    """The card's images sent with it: path, file (in the run's folder), media_type."""
    resumed_from_round: int = 0
    prompt: str = ""
    """The card as the model first saw it (a resume must not pick up later edits)."""
    system: str = ""
    """The system prompt as sent on every request of the run (append-only: never rebuilt)."""
    tool_specs: list[dict[str, Any]] = []
    """`tools` as sent on every request of the run; a resume sends exactly these again."""
    paths: dict[str, list[str]] = {}
    """The read and write paths the run began with (a resume tells the model what changed)."""
    base_tree: str = ""
    """The write area at run start as a git tree id: the "before" of every diff."""
    workdir: str = ""
    """Where the run works: the workspace, or its own git worktree (isolation)."""
    checkout: str = ""
    """What the checkout is when it is not a branch with its history: "HEAD detached at …",
    "a shallow clone" (the start line names it: a commit lands on no branch, or the card's
    history and the forecast see only part of git's)."""
    package: str = ""
    """The monorepo package whose commands the run has, as `package web (packages/web)`;
    "" for a repository without packages (config/packages.py)."""


class RoundStarted(_Event):
    """A request is about to go to the model."""

    type: Literal["round_start"] = "round_start"
    round: int
    max_rounds: int


class RoundFinished(_Event):
    """The model answered one request. `usage` and `cost_usd` are this round's; totals follow."""

    type: Literal["round"] = "round"
    round: int
    max_rounds: int
    ms: int
    usage: Usage
    cost_usd: float
    stop_reason: str | None
    calls: list[str]
    text: str
    total_usage: Usage
    total_cost_usd: float
    request: dict[str, Any] | None = None
    """The exact request body as sent (the run log keeps it so a run can be resumed)."""
    response: list[dict[str, Any]] | None = None
    """The assistant content blocks exactly as received."""


class _ToolCall(_Event):
    """Which call of which round an event is about."""

    round: int
    tool_use_id: str
    name: str
    arguments: dict[str, Any]


class ToolStarted(_ToolCall):
    """A tool call is about to run."""

    type: Literal["tool_start"] = "tool_start"


class ToolFinished(_ToolCall):
    """A tool call ended; `result` is the plain text the model will see."""

    type: Literal["tool"] = "tool"
    ms: int
    result: str
    is_error: bool
    content: list[dict[str, Any]] | None = None
    """The tool_result content exactly as sent when it is more than `result` (images)."""


class ToolOutput(_Event):
    """Lines a running command printed, as they come (a test run's progress, a build's errors).

    Transient: the log does not keep it (the call's `ToolFinished` holds the whole output)."""

    type: Literal["tool_output"] = "tool_output"
    name: str
    text: str


class CallObserved(_Event):
    """The runner's record of one call: the write area's fingerprint before and after it.

    Logged so that a resumed run can still check evidence that cites calls made before the
    interruption (and know whether the code changed since).
    """

    type: Literal["call"] = "call"
    tool_use_id: str
    before: str
    after: str


class CriterionReported(_Event):
    """The model reported evidence for one acceptance criterion (0-based index), accepted.

    Only evidence the runner could check is recorded: every citation names a call of this run
    whose result contains the quote, made on the write area as it was when reported (`tree`).
    """

    type: Literal["criterion"] = "criterion"
    index: int
    passed: bool
    evidence: str
    cites: list[Citation] = []
    tree: str = ""
    """The write area's fingerprint the cited calls saw."""
    code_level: str = ""
    """The model checked this criterion in the code, not the running app, and says why."""
    screenshots: list[str] = []
    """What the verifying calls showed of the app, saved under the run's folder."""


class CheckRun(BaseModel):
    """One build or test command the runner ran itself, and what came of it."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["build", "test"]
    argv: list[str]
    exit_code: int | None
    ok: bool
    tail: str
    """The last lines of the output (evidence, and what the model is shown on failure)."""
    tests_ran: int | None = None
    """Tests that ran (skipped ones excluded) by the runner's own summary (None: not counted)."""
    failures: list[str] = []
    """The test ids the runner named as failed."""
    skipped: int | None = None
    """Tests the runner skipped (None: not counted)."""
    runner: str = ""
    """Whose output was counted (`cargo test`, `vitest + mocha`, `junit`)."""
    uncounted: str = ""
    """Why the tests were not counted (`unknown runner output`); empty when they were."""
    why: list[str] = []
    """The lines that say why the command failed (empty when it passed)."""


class ChecksRan(_Event):
    """The runner ran the configured build and tests itself, on the tree `tree`.

    `phase` is `baseline` (run start: how many tests there are), `commit` (the tree about to be
    reviewed and committed) or `hand_edit` (the tree after the reviewer changed files).
    """

    type: Literal["checks"] = "checks"
    phase: Literal["baseline", "commit", "hand_edit"]
    tree: str
    checks: list[CheckRun]
    ok: bool
    tests_ran: int | None = None
    baseline: int | None = None
    sees: str | None = None
    """Which tree the commands saw (the baseline says it: a worktree is shown at the checkout's
    path, so the tests import the code being committed)."""


class GateObjected(_Event):
    """The model claimed `done` but a check failed; the runner told it what is missing."""

    type: Literal["objection"] = "objection"
    attempt: int
    max_attempts: int
    reason: str
    """The failure reason the run ends with if this is not fixed (unverified, tests_failed …)."""
    message: str
    """The message sent to the model, as sent (a resume replays it)."""


class Problem(BaseModel):
    """One `file:line` problem found in build or test output."""

    path: str
    line: int
    column: int = 1
    severity: Literal["error", "warning"] = "error"
    message: str


class BuildChecked(_Event):
    """A build or test command finished; its `file:line` problems, possibly none."""

    type: Literal["build"] = "build"
    tool: str
    ok: bool
    problems: list[Problem]
    why: list[str] = []
    """The lines that say why it failed, `file:line` or not (the error, EROFS, a test's id)."""


class ReviewRequested(_Event):
    """The model asked to commit; the run waits for the approver."""

    type: Literal["review_request"] = "review_request"
    message: str
    files: list[str]
    diff: str
    warnings: list[str] = []
    """What the user must accept knowingly (e.g. fewer tests ran than at the start)."""


class ReviewDecided(_Event):
    """The approver answered. `decision` is accept, reject or no_commit."""

    type: Literal["review"] = "review"
    decision: Literal["accept", "reject", "no_commit"]
    reason: str
    files: list[str]
    commit: str | None = None


class Compacted(_Event):
    """Old context was dropped or summarised to stay inside the context window."""

    type: Literal["compaction"] = "compaction"
    kind: Literal["stub_tool_results", "summary"]
    dropped: list[str]
    tokens_before: int
    tokens_after: int
    tool_use_ids: list[str] = []
    """Stubbed tool results (kind stub_tool_results), so a resume can redo exactly this."""
    removed_messages: int = 0
    """Messages removed after the first one (kind summary)."""
    summary: str = ""


class Notice(_Event):
    """Something the user should know that is not an error of the run (e.g. a skipped MCP tool)."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    message: str


class Announced(_Event):
    """The run told the model something new at the end of the conversation (a changed tool
    set, …): a system message on models that take them, else text after the tool results.
    Logged so a resume rebuilds the conversation byte for byte."""

    type: Literal["announce"] = "announce"
    text: str
    as_system: bool


class RunFinished(_Event):
    """The run ended. Always the last event of a run, however it ended."""

    type: Literal["result"] = "result"
    status: Literal["done", "verified", "failed"]
    """done: committed after an accepted review, every check held; verified: every check held
    but nothing was committed (`outcome` says why); failed: `reason` says why."""
    outcome: Literal["committed", "not_committed", "nothing_to_change"] | None = None
    reason: FailureReason | None = None
    detail: str = ""
    rounds: int
    tool_calls: int
    usage: Usage
    """Every token of the run; `usage.total` is what the token budget counts."""
    cost_usd: float
    commit: str | None = None
    final_text: str = ""
    work_tree: str | None = None
    """When the write area was restored at the end: the run's changes as a git tree (resume)."""
    unmerged_branch: str | None = None
    """The accepted commit is on this branch only: it did not apply cleanly to the user's
    branch, so the card waits in `Review` for the user to merge it (never `Done`)."""
    ledger: list[LedgerEntry] = []
    """The evidence ledger at the end: one entry per acceptance criterion."""
    kept_branch: str | None = None
    """The run did not end Done, so its commit was taken off the user's branch: it is here."""


Event = Annotated[
    RunStarted
    | RoundStarted
    | RoundFinished
    | ToolStarted
    | ToolFinished
    | ToolOutput
    | CriterionReported
    | CallObserved
    | BuildChecked
    | ChecksRan
    | GateObjected
    | ReviewRequested
    | ReviewDecided
    | Compacted
    | Notice
    | Announced
    | RunFinished,
    Field(discriminator="type"),
]
"""Everything a run can say about itself."""
