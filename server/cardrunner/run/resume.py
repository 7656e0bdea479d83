"""Resume a run from its log, with the conversation exactly as it was sent.

The log holds every assistant turn as received, every tool result as sent and every compaction,
so the conversation can be rebuilt byte for byte. A `tool_use` left without a result (the
process died mid-call) is answered "interrupted". The budget goes on from what was used, plus
what the user grants. A note at the end tells the model that the run was resumed and that the
app is no longer running, so side effects are re-checked rather than assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from cardrunner.agent import events as ev
from cardrunner.agent.compaction import Compactor
from cardrunner.agent.limits import Guards, Spent
from cardrunner.agent.loop import add_announcement
from cardrunner.agent.model import Block, Message, Model
from cardrunner.card.card import card_key
from cardrunner.card.images import kept_blocks
from cardrunner.card.record import RESUMABLE_REASONS
from cardrunner.config.paths import StatePaths
from cardrunner.config.settings import Limits
from cardrunner.git.repo import GitRepo
from cardrunner.record.log import read_events, read_log
from cardrunner.run.liveness import own_files
from cardrunner.run.options import ResumeGrant
from cardrunner.run.workarea import carried
from cardrunner.verify.calls import ObservedCall


@dataclass
class ResumeState:
    """Everything needed to continue a run where it stopped."""

    run_id: str
    log_path: Path
    messages: list[Message]
    limits: Limits
    rounds: int
    usage: ev.Usage
    cost_usd: float
    tool_calls: int
    elapsed: float
    base_tree: str
    prompt: str
    reports: dict[int, ev.CriterionReported] = field(default_factory=dict)
    """Accepted evidence; it holds after the resume only if the write area is unchanged."""
    baseline: int | None = None
    """Tests that ran at the original run's start (the runner's count)."""
    baseline_skipped: int | None = None
    """Tests skipped at the original run's start."""
    known_failures: list[str] | None = None
    """Tests that already failed at the original run's start."""
    trees: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The write area's fingerprint before and after each call (`call` lines)."""
    finished: list[ev.ToolFinished] = field(default_factory=list)
    """Every finished call, in order."""
    last_checks: ev.ChecksRan | None = None
    """The runner's last own build and test run (before a review)."""
    review: ev.ReviewDecided | None = None
    """The last review's decision."""
    work_tree: str | None = None
    previous_reason: str = "interrupted"
    history: list[list[Block]] = field(default_factory=list)
    system: str | None = None
    """The system prompt the run sent (None: a log from before it was kept)."""
    tools: list[dict[str, Any]] | None = None
    """`tools` as the run sent them (None: a log from before they were kept)."""
    paths: dict[str, list[str]] = field(default_factory=dict)
    instructions: list[str] = field(default_factory=list)
    """The project's instruction files the kept system prompt holds (as the start listed them)."""
    images: list[dict[str, str]] = field(default_factory=list)
    """The card's images the first message carried (kept in the run's folder)."""


def observed_calls(state: ResumeState) -> list[ObservedCall]:
    """The runner's record of the calls before the resume, for checking evidence that cites them.

    A call without its `call` line (a log from before the runner kept one) gets no fingerprint,
    so it never counts as made on the current code.
    """
    out: list[ObservedCall] = []
    for seq, call in enumerate(state.finished):
        before, after = state.trees.get(call.tool_use_id, ("", "unknown"))
        out.append(
            ObservedCall(
                id=call.tool_use_id,
                name=call.name,
                arguments=call.arguments,
                text=call.result,
                is_error=call.is_error,
                round=call.round,
                seq=seq,
                before=before,
                after=after,
            )
        )
    return out


async def carry_over(state: ResumeState, git: GitRepo, paths: list[str]) -> None:
    """The log's fingerprints, as the write area's fingerprint reads them in the resumed run.

    Between the stop and the resume HEAD may have moved outside the write area (the card's
    state committed, a fresh worktree on the branch as it is now), which changes every
    fingerprint though no file changed; `carried` takes each onto HEAD as it is now, so evidence
    on the write area as it still is holds, and evidence on files changed since is refused.
    """
    checks = state.last_checks
    pairs = state.trees.values()
    trees = [state.base_tree, *(t for pair in pairs for t in pair)]
    trees += [r.tree for r in state.reports.values()] + ([checks.tree] if checks else [])
    now = await carried(git, paths, trees)
    state.base_tree = now[state.base_tree]
    state.trees = {use: (now[b], now[a]) for use, (b, a) in state.trees.items()}
    state.reports = {
        i: r.model_copy(update={"tree": now[r.tree]}) for i, r in state.reports.items()
    }
    if checks is not None:
        state.last_checks = checks.model_copy(update={"tree": now[checks.tree]})


def reviewed_tree(state: ResumeState) -> str | None:
    """The write area's fingerprint after the last git_commit call (what the review was about)."""
    commits = [c.tool_use_id for c in state.finished if c.name == "git_commit"]
    return state.trees.get(commits[-1], ("", ""))[1] or None if commits else None


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def find_resumable(root: Path, card: Path) -> Path | None:
    """The newest log of `card` whose run did not finish done (or None)."""
    folder = StatePaths(root).ensure().runs
    if not folder.is_dir():
        return None
    rel = card_key(card, root)  # as the log's `start` names it (`relative`)
    logs = own_files(root, folder.glob("*.jsonl"))  # a log git tracks came with a clone
    for log in sorted(logs, key=_mtime, reverse=True):
        try:
            events = list(read_events(read_log(log)))
        except OSError:  # a FIFO, a looping link, a giant: no run's log
            continue
        start = next((e for e in events if isinstance(e, ev.RunStarted)), None)
        if start is None or start.card != rel:
            continue
        result = next((e for e in reversed(events) if isinstance(e, ev.RunFinished)), None)
        if result is not None and (
            result.status == "done" or result.reason not in RESUMABLE_REASONS
        ):
            return None
        return log
    return None


def rebuild(log: Path) -> ResumeState:
    """Rebuild the conversation and the counters of the run in `log`."""
    events = list(read_events(read_log(log)))
    start = next(e for e in events if isinstance(e, ev.RunStarted))
    try:
        images = kept_blocks(start.images, log.parent / start.run_id)
    except OSError as exc:
        raise ValueError(
            f"the card's images this run sent are gone from its folder ({exc})"
        ) from exc
    state = ResumeState(
        run_id=start.run_id,
        log_path=log,
        messages=[Message("user", [{"type": "text", "text": start.prompt}, *images])],
        limits=Limits.model_validate(start.limits),
        rounds=0,
        usage=ev.Usage(),
        cost_usd=0.0,
        tool_calls=0,
        elapsed=max(0.0, (events[-1].time - events[0].time).total_seconds()),
        base_tree=start.base_tree,
        prompt=start.prompt,
        system=start.system or None,
        tools=start.tool_specs or None,
        paths=start.paths,
        instructions=start.instructions,
        images=start.images,
    )
    replay = _Replay(state)
    for event in events:
        replay.apply(event)
    _close_turn(state.messages, replay.pending)
    return state


@dataclass
class _Replay:
    """Plays a run's logged events back into its conversation and counters."""

    state: ResumeState
    pending: dict[str, Block] = field(default_factory=dict)
    """The last turn's tool calls that have no result yet."""

    def apply(self, event: ev.Event) -> None:
        state, messages = self.state, self.state.messages
        match event:
            case ev.RoundFinished():
                self._round(event)
            case ev.ToolFinished():
                state.finished.append(event)
                if self.pending.pop(event.tool_use_id, None) is not None:
                    _result(
                        messages, event.tool_use_id, event.content or event.result, event.is_error
                    )
                    state.tool_calls += 1
            case ev.Compacted():
                _close_turn(messages, self.pending)
                if event.kind == "stub_tool_results":
                    Compactor.apply_stubs(messages, event.tool_use_ids)
                else:
                    Compactor.apply_summary(messages, event.removed_messages, event.summary)
            case ev.Announced():
                add_announcement(messages, event)
            case ev.CriterionReported():
                state.reports[event.index] = event
            case ev.CallObserved():
                state.trees[event.tool_use_id] = (event.before, event.after)
            case ev.GateObjected():
                _close_turn(messages, self.pending)
                messages.append(Message("user", [{"type": "text", "text": event.message}]))
            case ev.ChecksRan() if event.phase == "baseline":
                state.baseline = event.tests_ran
                state.baseline_skipped = next((c.skipped for c in event.checks), None)
                failed = [f for c in event.checks for f in c.failures]
                state.known_failures = failed if not event.ok and failed else None
            case ev.ChecksRan():
                state.last_checks = event
            case ev.ReviewDecided():
                state.review = event
            case ev.RunFinished():
                state.work_tree = event.work_tree
                if event.kept_branch:  # its commit was taken off the branch: review again
                    state.review = None
                state.previous_reason = event.reason or "interrupted"
            case (
                ev.RunStarted()
                | ev.RoundStarted()
                | ev.ToolStarted()
                | ev.ToolOutput()
                | ev.BuildChecked()
                | ev.ReviewRequested()
                | ev.Notice()
            ):
                pass  # the conversation holds none of these
            case _:
                assert_never(event)

    def _round(self, event: ev.RoundFinished) -> None:
        state, content = self.state, event.response or []
        _close_turn(state.messages, self.pending)
        state.messages.append(Message("assistant", content))
        state.history.append(content)
        state.rounds = event.round
        state.usage, state.cost_usd = state.usage + event.usage, state.cost_usd + event.cost_usd
        self.pending = {b["id"]: b for b in content if b.get("type") == "tool_use"}
        if event.stop_reason == "pause_turn":
            state.messages.append(Message("user", [{"type": "text", "text": "Continue."}]))


def _result(messages: list[Message], use_id: str, content: Any, is_error: bool) -> None:
    """The tool_result exactly as it was sent: its text, or its blocks when it had images."""
    block: Block = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    if is_error:
        block["is_error"] = True
    if messages[-1].role != "user":
        messages.append(Message("user", []))
    messages[-1].content.append(block)


def _close_turn(messages: list[Message], pending: dict[str, Block]) -> None:
    """Answer every call of the last turn that has no result: the run died while it ran."""
    for use_id, use in list(pending.items()):
        _result(
            messages,
            use_id,
            f"{use['name']} was interrupted: the run stopped before it finished.",
            True,
        )
        pending.pop(use_id)


def spent(state: ResumeState) -> Spent:
    """What the run used before it stopped: its budget goes on from there."""
    return Spent(state.rounds, state.usage, state.cost_usd, state.tool_calls, state.elapsed)


def resume_note(state: ResumeState, limits: Limits) -> str:
    budget = Guards(limits, None, spent(state))
    return (
        f"[cardrunner: this run was resumed after it stopped ({state.previous_reason}). Anything "
        "you started is no longer running: start the app again before checking it live. "
        f"Budget left: {budget.left()}.]"
    )


def prepare_resume(
    root: Path, card_path: Path, model: Model, grant: ResumeGrant, current: Limits
) -> ResumeState:
    """The card's last unfinished run, ready to go on; raises ValueError if there is none.

    The limits are `current` (the settings' now, plus the grant), never the log's: a log is a
    file in the repository, and what it says must not lift the user's limits. A replayed model
    is moved to the round the run stopped at, so it answers where it left off.
    """
    log = find_resumable(root, card_path)
    if log is None:
        raise ValueError(f"{card_path.name} has no unfinished run to resume")
    state = rebuild(log)
    limits = current.model_copy()
    if grant.rounds:
        limits.max_rounds = max(limits.max_rounds, state.rounds) + grant.rounds
    if grant.cost_usd:
        limits.max_cost_usd = max(limits.max_cost_usd or 0.0, state.cost_usd) + grant.cost_usd
    if limits.max_rounds and state.rounds >= limits.max_rounds:
        raise ValueError(
            f"all {limits.max_rounds} rounds are used; grant more with --grant-rounds N"
        )
    if limits.max_cost_usd and state.cost_usd >= limits.max_cost_usd:
        raise ValueError(
            f"the cost budget ${limits.max_cost_usd:.2f} is used; grant more with --grant-cost USD"
        )
    state.limits = limits
    last = next(m for m in reversed(state.messages) if m.role != "system")
    note: Any = {"type": "text", "text": resume_note(state, limits)}
    if last.role == "user":
        last.content.append(note)
    else:
        state.messages.append(Message("user", [note]))
    from cardrunner.models.scripted import ScriptedModel

    if isinstance(model, ScriptedModel):
        model.resume_at(state.rounds, state.history)
    return state


def what_changed(
    state: ResumeState, tools: list[dict[str, Any]], paths: dict[str, list[str]]
) -> str:
    """What differs from when the run began, for the resume note. The conversation keeps the
    run's own `system` and `tools` (they are every thinking block's prefix), so a tool whose
    description changed (a command configured since), a tool that is gone and changed paths
    are told to the model instead."""
    if state.tools is None:
        return ""
    then = {t["name"]: t for t in state.tools}
    now = {t["name"]: t for t in tools}
    parts = []
    for name in sorted(set(then) & set(now)):
        if then[name] != now[name]:
            parts.append(f"{name} changed; it now reads: {now[name].get('description', '')}")
    gone = sorted(set(then) - set(now))
    if gone:
        parts.append(f"no longer available: {', '.join(gone)}")
    new = sorted(set(now) - set(then))
    if new:
        parts.append(f"configured since but not offered in this run: {', '.join(new)}")
    for kind in ("read", "write"):
        before, after = state.paths.get(kind), paths.get(kind)
        if before is not None and after is not None and before != after:
            parts.append(f"the {kind} paths are now {', '.join(after)} (were {', '.join(before)})")
    if not parts:
        return ""
    return "[cardrunner: the settings changed since the run began: " + "; ".join(parts) + ".]"
