"""`git_commit`: the one tool that commits — after the runner's own checks and an accepted review.

Before the user is asked, the runner builds and tests the exact tree it is about to commit
(`RunnerChecks`); a failure goes back to the model as this tool's result and nobody is bothered
with a diff that does not build. The review shows the checks, the evidence ledger and anything the
user must accept knowingly (fewer tests than at the start).

The review's answer is a set of byte-exact choices on the diff the reviewer saw (`git.choice`):
drops of files and single hunks, and hand edits made while it was open, in any order. When the
tree they leave differs from the one reviewed, the runner builds and tests *that* tree, checked
out on its own (files the reviewer added included, the working tree's other files not), withdraws
the evidence the change may have invalidated, and tells the model and the commit message exactly
what was dropped and what was edited — a drop as a drop, an edit as an edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice, ReviewDecided, ReviewRequested
from cardrunner.agent.review import Approver, ReviewDecision, ReviewRequest
from cardrunner.agent.toolpool import ToolContext, ToolError, ToolResult, truncate
from cardrunner.card.record import unclosing
from cardrunner.config.secrets import redact, shown
from cardrunner.git.choice import Choice, ChoiceError, Reviewed, choose, committed_files, settle
from cardrunner.git.hunks import quote
from cardrunner.git.repo import GitRepo
from cardrunner.tools.base import FunctionTool, schema
from cardrunner.tools.evidence import Evidence
from cardrunner.verify.builds import RunnerChecks
from cardrunner.verify.calls import CallLog, OutsideWatch
from cardrunner.verify.hooks import CommitHooks
from cardrunner.verify.scope import is_config, review_header, secrets_in_diff

_HAND_DIFF_CHARS = 1500


def names(paths: list[str]) -> str:
    """Paths for a person or the model to read: one git-quoted token each."""
    return ", ".join(quote(p) for p in paths)


@dataclass(frozen=True)
class ReviewSoFar:
    """The review as a resumed run left it; a new run has had none."""

    last_decision: str | None = None
    committed: str | None = None
    reviewed_tree: str | None = None


@dataclass
class CommitTool:
    """The `git_commit` tool of one run."""

    git: GitRepo
    approver: Approver
    write_paths: list[str]
    base_tree: str
    run_id: str
    card_title: str
    card_path: Path
    card_slug: str
    trailers: Callable[[], dict[str, str]]
    calls: CallLog
    checks: RunnerChecks
    evidence: Evidence
    hooks: CommitHooks | None
    """The repository's commit hooks, run after the checks (None: `[git] hooks = false`)."""
    outside: OutsideWatch
    """The tracked files outside the write area: what the run's code changed there goes back."""
    ignored_at_start: frozenset[str] = field(default_factory=frozenset)
    """Ignored files in the write area at run start: any others the run created are listed."""
    so_far: InitVar[ReviewSoFar] = ReviewSoFar()
    committed: str | None = field(default=None, init=False)
    last_decision: str | None = field(default=None, init=False)
    """The review's last answer (accept, reject, no_commit): the verdict reads it."""
    reviewed_tree: str | None = field(default=None, init=False)
    """The write area the last review was about; once accepted, the committed tree."""
    code_level_accepted: frozenset[int] = field(default=frozenset(), init=False)
    """Criteria the model checked in the code only, which a person accepted knowingly."""

    def __post_init__(self, so_far: ReviewSoFar) -> None:
        self.last_decision, self.committed = so_far.last_decision, so_far.committed
        self.reviewed_tree = so_far.reviewed_tree

    def tool(self) -> FunctionTool:
        return FunctionTool(
            name="git_commit",
            description=(
                "Ask to commit everything this run changed in the write area: the runner builds "
                "and tests it, then the user reviews the diff; a failure or a rejection comes back "
                "as the result, with the reason. Message: 'card: <card title>', then two or three "
                "sentences on what changed and how it was verified."
            ),
            input_schema=schema({"message": {"type": "string", "minLength": 1}}, ["message"]),
            fn=self._commit,
            timeout=7 * 24 * 3600.0,  # a human decides; cancellation still stops it at once
        )

    async def _commit(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if self.committed:
            raise ToolError(
                f"Already committed as {self.committed[:10]}. End with the RESULT line."
            )
        message = unclosing(shown(args["message"].strip()))  # only cardrunner closes issues
        tree = await self._area()
        raw, files = await self.git.diff_trees(self.base_tree, tree, self.write_paths)
        if not files:
            raise ToolError(
                "Nothing changed in the write area since the run started; nothing to commit. If "
                "the criteria already hold, report them with evidence and end with RESULT: done."
            )
        text = raw.decode("utf-8", errors="replace")
        self._refuse_secrets(text, ctx)  # before any check: a secret is never built or shown
        await self._put_back_outside(ctx)
        warnings = await self._first_checks(tree, ctx)
        if isinstance(warnings, ToolResult):
            return warnings
        warnings += self._code_only()
        if self.hooks is not None:
            hooked = await self.hooks.run(message, tree)
            if not hooked.ok:
                return ToolResult(hooked.report, is_error=True)
            message = hooked.message
        self.reviewed_tree = tree
        request = await self._request(message, files, text, warnings)
        ctx.emit(
            ReviewRequested(message=message, files=files, diff=request.diff, warnings=warnings)
        )
        decision = await self.approver.review(request)
        if decision.decision == "accept":
            reviewed = Reviewed(self.base_tree, tree, raw, files)
            return await self._accept(message, reviewed, decision, ctx)
        return self._declined(decision, files, ctx)

    async def _put_back_outside(self, ctx: ToolContext) -> None:
        """Code the run ran changed tracked files outside the write area (a test rewritten to
        assert nothing): they go back as the run found them, no call made before counts as
        evidence any more, and nothing is committed this time."""
        moved = await self.outside.changed()
        if not moved:
            return
        kept = await self.outside.restore(moved)
        self.calls.outside_restored(moved, ctx.round)
        self.evidence.mark_stale(
            list(self.evidence.reports), f"gathered while {names(moved)} differed from the commit"
        )
        back = [p for p in moved if p not in kept]
        said = f"put back as the run found them: {names(back)}. " if back else ""
        said += (
            f"Changed before the run too, so left as they are now: {names(kept)}. " if kept else ""
        )
        raise ToolError(
            f"Code this run ran changed files outside the write area ({names(moved)}); only "
            f"{', '.join(self.write_paths)} may change. {said}Nothing was committed. Results of "
            "calls made before this no longer count as evidence: find what writes there, fix it, "
            "run the checks again, report the criteria again and call git_commit again."
        )

    async def _first_checks(self, tree: str, ctx: ToolContext) -> list[str] | ToolResult:
        """The runner's build and tests before anyone is asked: the review's warnings, or the
        failure the model reads instead of a review."""
        if not self.checks.configured:
            return []
        ran = await self.checks.run("commit", tree)  # outside the write area: as it was found
        ctx.emit(ran)
        await self._put_back_outside(ctx)  # the code under review wrote there in the checks too
        if not self.checks.passed(ran):
            return ToolResult(
                self.checks.report(ran) + "\nNothing was committed and the user was not asked. "
                "Fix the failure, then call git_commit again.",
                is_error=True,
            )
        warnings = [drop] if (drop := self.checks.drop(ran)) else []
        warnings += [note] if (note := self.checks.uncounted(ran)) else []
        if not ran.ok:
            known = ", ".join(self.checks.known_failures or [])
            warnings.append(f"tests that already failed at the start still fail: {known}")
        return warnings

    def _code_only(self) -> list[str]:
        """The criteria the model checked in the code only: a person must accept each."""
        return [
            f"criterion {e.index + 1} was checked in the code only, NOT in the running app — the "
            f"model says: {e.code_reason}"
            for e in self.evidence.code_only()
        ]

    def _unacknowledged_code(self, decision: ReviewDecision) -> str | None:
        """Criteria checked in the code only, not accepted knowingly: the runner refuses."""
        marked = sorted(e.index for e in self.evidence.code_only())
        if marked and not decision.acknowledged:
            return (
                f"Nothing was committed: {self.evidence.named(marked)}: checked in the code only, "
                "not in the running app, and the review did not accept that knowingly (an "
                "unattended review never does). Verify them in the app, then call git_commit."
            )
        self.code_level_accepted = frozenset(marked)
        return None

    async def _request(
        self, message: str, files: list[str], raw: str, warnings: list[str]
    ) -> ReviewRequest:
        hidden = sorted(await self.git.ignored_files(self.write_paths) - self.ignored_at_start)
        built = await self.git.build_output_files(self.write_paths)
        return ReviewRequest(
            run_id=self.run_id,
            card_title=shown(self.card_title),
            card_path=self.card_path,
            root=self.git.root,
            message=message,
            files=files,
            diff=shown(review_header(files, hidden, built) + raw),
            base_tree=self.base_tree,
            hidden=hidden,
            flagged=sorted({p for p in [*files, *hidden] if is_config(p)}),
            warnings=warnings,
            checks=self.checks.summary(),
            evidence=[f"criterion {e.index + 1}: {e.line()}" for e in self.evidence.ledger()],
            proof=self.evidence.proof(),
        )

    def _declined(self, decision: ReviewDecision, files: list[str], ctx: ToolContext) -> ToolResult:
        if decision.decision == "reject":
            reason = decision.reason or "rejected in the review"
            self._decided(ctx, ReviewDecided(decision="reject", reason=reason, files=files))
            return ToolResult(
                f"The user REJECTED the changes: {reason}\nNothing was committed; your changes are "
                "still in the working tree. Address this, verify again, then call git_commit again."
            )
        if decision.acknowledged:
            self.code_level_accepted = frozenset(e.index for e in self.evidence.code_only())
        self._decided(ctx, ReviewDecided(decision="no_commit", reason=decision.reason, files=files))
        return ToolResult(
            "The user reviewed the diff; committing is switched off for this run. Do not call "
            "git_commit again: end now with RESULT: done."
        )

    def _refuse_secrets(self, diff: str, ctx: ToolContext) -> None:
        """A change that would commit a secret never reaches the review: say file and line."""
        hits = secrets_in_diff(diff)
        if not hits:
            return
        where = "; ".join(str(hit) for hit in hits[:20])
        text = (
            f"Refused: this change would commit a secret ({where}). Remove it from the file; "
            "code must read secrets from the environment at run time. Nothing was committed."
        )
        ctx.emit(Notice(level="warning", message=text))
        raise ToolError(text)

    def _decided(self, ctx: ToolContext, event: ReviewDecided) -> None:
        self.last_decision = event.decision
        ctx.emit(event)

    def _refused(self, text: str, files: list[str], ctx: ToolContext) -> ToolResult:
        """The runner refuses, not the user: no review decision is recorded as the user's."""
        ctx.emit(ReviewDecided(decision="reject", reason=text, files=files))
        return ToolResult(text, is_error=True)

    async def _area(self) -> str:
        """The write area's tree now; the call log learns of it too (a run's log fingerprints
        the write area by this same tree)."""
        await self.calls.refresh()
        return await self.git.snapshot(self.write_paths)

    async def _accept(
        self, message: str, reviewed: Reviewed, decision: ReviewDecision, ctx: ToolContext
    ) -> ToolResult:
        now = await self._area()
        try:
            choice = await choose(
                self.git, self.write_paths, reviewed, now, decision.drop, decision.drop_hunks
            )
        except ChoiceError as exc:
            return self._refused(f"{exc}.", reviewed.files, ctx)
        kept = await committed_files(self.git, choice, self.write_paths)
        if not kept:
            await settle(self.git, choice)
            await self.calls.refresh()
            why = decision.reason or "every change dropped"
            self._decided(ctx, ReviewDecided(decision="reject", reason=why, files=reviewed.files))
            return ToolResult(
                f"The user dropped every change ({decision.reason or 'no reason given'}); "
                "nothing was committed."
            )
        stale = await self._recheck(choice, ctx) if choice.final != reviewed.tree else []
        if isinstance(stale, ToolResult):
            return stale
        if refused := self._unacknowledged_drop(choice.final, decision):
            return self._refused(refused, reviewed.files, ctx)
        if refused := self._unacknowledged_code(decision):
            return self._refused(refused, reviewed.files, ctx)
        body = redact(message + _commit_note(choice, decision.reason))  # a hook may add one
        trailers = self._trailer_block()  # control bytes in it: written out by the commit
        sha = await self.git.commit_tree(choice.final, self.write_paths, f"{body}\n\n{trailers}\n")
        await settle(self.git, choice)
        self.committed = sha
        self.reviewed_tree = await self.calls.refresh()
        self.evidence.checked_on(sha, self.reviewed_tree)
        self._decided(
            ctx, ReviewDecided(decision="accept", reason=decision.reason, files=kept, commit=sha)
        )
        text = f"Accepted and committed {sha[:10]} ({len(kept)} file(s): {names(kept)})."
        return ToolResult(text + await self._for_model(choice, decision.reason, stale))

    async def _recheck(self, choice: Choice, ctx: ToolContext) -> list[int] | ToolResult:
        """The reviewer's choices changed the tree: build and test the tree to be committed,
        checked out on its own; withdraw the evidence the change may have invalidated."""
        if self.checks.configured:
            ran = await self.checks.run_exact("hand_edit", choice.final, self.git)
            ctx.emit(ran)
            if not self.checks.passed(ran):
                return self._refused(
                    f"With the reviewer's choices ({_what(choice)}) the runner's checks fail on "
                    f"the tree that would be committed.\n{self.checks.report(ran)}\nNothing was "
                    "committed; the working tree still holds your changes and the reviewer's "
                    f"edits. Do what the reviewer meant{_leave_out(choice)}, verify again, then "
                    "call git_commit again.",
                    choice.reviewed.files,
                    ctx,
                )
        why = f"the reviewer's choices ({_what(choice)})"
        return self.evidence.after_hand_edit(
            choice.reviewed.tree, choice.final, choice.changed, why
        )

    def _unacknowledged_drop(self, tree: str, decision: ReviewDecision) -> str | None:
        """Fewer tests than at the start, not accepted knowingly: the runner refuses."""
        if not (drop := self.checks.drop()):
            return None
        if not decision.acknowledged:
            return (
                f"Nothing was committed: {drop}; the review did not accept that knowingly. "
                "Restore the tests that no longer run, then call git_commit again."
            )
        self.checks.accepted_drops.add(tree)
        return None

    async def _for_model(self, choice: Choice, reason: str, stale: list[int]) -> str:
        """What the model is told beyond the commit: drops as drops, edits as edits."""
        why = reason or "no reason given"
        text = ""
        if choice.dropped:
            text += (
                f"\nThe reviewer dropped these changes (undone in the working tree, not "
                f"committed): {choice.describe_drops()}. Reason: {why}."
            )
        if choice.edited:
            diff, _ = await self.git.diff_trees(choice.reviewed.tree, choice.now, choice.edited)
            shown_diff = truncate(shown(diff.decode("utf-8", errors="replace")), _HAND_DIFF_CHARS)
            text += (
                f"\nBefore accepting, the reviewer changed {names(choice.edited)}; the commit "
                f"holds their version (diff from what you proposed):\n{shown_diff}"
            )
        if choice.final == choice.reviewed.tree:
            return text + "\nEnd with the RESULT line."
        again = f"The evidence for {self.evidence.named(stale)} is stale: " if stale else ""
        return text + (
            f"\n{again}verify {'them' if stale else 'the change'} again on the committed code "
            "(report_criterion for each), then end with the RESULT line."
        )

    def _trailer_block(self) -> str:
        lines = [f"{k}: {v}" for k, v in self.trailers().items()]
        if self.checks.configured:
            lines.append(f"Checks: {self.checks.summary()}")
        lines += [f"Criterion-{e.index + 1}: {e.line()}" for e in self.evidence.ledger()]
        return "\n".join(lines)


def _what(choice: Choice) -> str:
    parts = [f"dropped {choice.describe_drops()}"] if choice.dropped else []
    parts += [f"changed {names(choice.edited)} by hand"] if choice.edited else []
    return "; ".join(parts)


def _leave_out(choice: Choice) -> str:
    return (
        f" (and leave out what they dropped: {choice.describe_drops()})" if choice.dropped else ""
    )


def _commit_note(choice: Choice, reason: str) -> str:
    """The commit message's account of the review: exactly what was dropped and edited."""
    note = ""
    if choice.edited:
        note += (
            f"\n\nThe reviewer changed {names(choice.edited)} before accepting; "
            "the commit holds their version."
        )
    if choice.dropped:
        note += f"\n\nDropped by the reviewer: {choice.describe_drops()}."
        note += f"\nReason: {shown(reason)}" if reason.strip() else ""
    return note
