"""`git_commit`: the one tool that commits — after the runner's own checks and an accepted review.

Before the user is asked, the runner builds and tests the exact tree it is about to commit
(`RunnerChecks`); a failure goes back to the model as this tool's result and nobody is bothered
with a diff that does not build. The review shows the checks, the evidence ledger and anything the
user must accept knowingly (fewer tests than at the start). If the user changes files before
accepting, the runner notices (the tree at accept time differs from the one it checked), checks
again, says so in the commit message and withdraws the evidence the edit may have invalidated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice, ReviewDecided, ReviewRequested
from cardrunner.agent.gate import ToolContext, ToolError, ToolResult, truncate
from cardrunner.agent.review import Approver, HunkRef, ReviewDecision, ReviewRequest
from cardrunner.config.display import shown
from cardrunner.git.hunks import Hunk, parse_diff, patch_of
from cardrunner.git.repo import GitRepo
from cardrunner.tools.base import FunctionTool, schema
from cardrunner.tools.evidence import Evidence
from cardrunner.verify.builds import RunnerChecks
from cardrunner.verify.calls import CallLog
from cardrunner.verify.hooks import CommitHooks
from cardrunner.verify.scope import is_config, review_header, secrets_in_diff

_HAND_DIFF_CHARS = 1500


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
    ignored_at_start: frozenset[str] = field(default_factory=frozenset)
    """Ignored files in the write area at run start: any others the run created are listed."""
    calls: CallLog = field(default_factory=CallLog)
    checks: RunnerChecks | None = None
    hooks: CommitHooks | None = None
    """The repository's commit hooks, run after the checks (None: `[git] hooks = false`)."""
    evidence: Evidence | None = None
    committed: str | None = None
    last_decision: str | None = None
    """The review's last answer (accept, reject, no_commit): the verdict reads it."""
    reviewed_tree: str | None = None
    """The write area the last review was about; once accepted, the committed tree."""

    def tool(self) -> FunctionTool:
        return FunctionTool(
            name="git_commit",
            description=(
                "Ask to commit everything this run changed in the write area. The runner first "
                "builds and tests exactly this code itself (a failure comes back as this tool's "
                "result), then the user reviews the diff and accepts or rejects it; a rejection "
                "comes back with the reason. First line of the message: 'card: <card title>'; then "
                "two or three sentences on what changed and how it was verified."
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
        message = shown(args["message"].strip())
        raw, files = await self.git.diff(self.base_tree, self.write_paths)
        hidden = sorted(await self.git.ignored_files(self.write_paths) - self.ignored_at_start)
        if not files:
            raise ToolError(
                "Nothing changed in the write area since the run started; nothing to commit. If "
                "the criteria already hold, report them with evidence and end with RESULT: done."
            )
        self._refuse_secrets(raw, ctx)  # before any check: a secret is never built or shown
        tree = await self.calls.refresh()
        warnings: list[str] = []
        if self.checks and self.checks.configured:
            ran = await self.checks.run("commit", tree)
            ctx.emit(ran)
            if not self.checks.passed(ran):
                return ToolResult(
                    self.checks.report(ran) + "\nNothing was committed and the user was not asked. "
                    "Fix the failure, then call git_commit again.",
                    is_error=True,
                )
            warnings += [drop] if (drop := self.checks.drop(ran)) else []
            if not ran.ok:
                known = ", ".join(self.checks.known_failures or [])
                warnings.append(f"tests that already failed at the start still fail: {known}")
        if self.hooks is not None:
            hooked = await self.hooks.run(message, tree)
            if not hooked.ok:
                return ToolResult(hooked.report, is_error=True)
            message = hooked.message
        self.reviewed_tree = tree
        diff = shown(review_header(files, hidden) + raw)
        request = ReviewRequest(
            run_id=self.run_id,
            card_title=shown(self.card_title),
            card_path=self.card_path,
            root=self.git.root,
            message=message,
            files=files,
            diff=diff,
            base_tree=self.base_tree,
            hidden=hidden,
            flagged=sorted({p for p in [*files, *hidden] if is_config(p)}),
            warnings=warnings,
            checks=self.checks.summary() if self.checks else "",
            evidence=[f"criterion {e.index}: {e.line()}" for e in self._ledger()],
        )
        ctx.emit(ReviewRequested(message=message, files=files, diff=diff, warnings=warnings))
        decision = await self.approver.review(request)
        if decision.decision == "reject":
            reason = decision.reason or "rejected in the review"
            self._decided(ctx, ReviewDecided(decision="reject", reason=reason, files=files))
            return ToolResult(
                f"The user REJECTED the changes: {reason}\nNothing was committed; your changes are "
                "still in the working tree. Address this, verify again, then call git_commit again."
            )
        if decision.decision == "no_commit":
            self._decided(
                ctx, ReviewDecided(decision="no_commit", reason=decision.reason, files=files)
            )
            return ToolResult(
                "The user reviewed the diff; committing is switched off for this run. Do not call "
                "git_commit again: end now with RESULT: done."
            )
        return await self._accept(message, files, tree, decision, ctx)

    def _ledger(self) -> list[Any]:
        return self.evidence.ledger() if self.evidence else []

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

    async def _accept(
        self, message: str, files: list[str], tree: str, decision: ReviewDecision, ctx: ToolContext
    ) -> ToolResult:
        dropped = [f for f in decision.drop if f in files]
        hunks = [h for h in decision.drop_hunks if h.path not in dropped]
        whole, hunk_note = await self._drop_hunks(hunks, files)
        dropped += whole
        if dropped:
            await self.git.restore(self.base_tree, dropped)
        kept = [f for f in files if f not in dropped]
        if not kept:
            self._decided(
                ctx,
                ReviewDecided(
                    decision="reject", reason=decision.reason or "all files dropped", files=files
                ),
            )
            return ToolResult(
                f"The user dropped every file ({decision.reason or 'no reason given'}); nothing was committed."
            )
        now = await self.calls.refresh()
        edits = await self._hand_edits(tree, now, dropped, ctx) if now != tree else None
        if edits is not None and edits.refused:  # the runner refuses, not the user: no reject
            ctx.emit(ReviewDecided(decision="reject", reason=edits.refused, files=files))
            return ToolResult(edits.refused + "\nNothing was committed.", is_error=True)
        if self.checks and (drop := self.checks.drop()):
            if not decision.acknowledged:
                reason = f"{drop}; the review did not accept that knowingly"
                ctx.emit(ReviewDecided(decision="reject", reason=reason, files=files))
                return ToolResult(
                    f"Nothing was committed: {reason}. Restore the tests that no longer run, "
                    "then call git_commit again.",
                    is_error=True,
                )
            self.checks.accepted_drops.add(now)
        body = message + (edits.note if edits else "")
        if dropped:
            body += f"\n\nLeft out by the reviewer (restored): {', '.join(dropped)}."
        if hunk_note:
            body += f"\n\nLeft out by the reviewer (undone): {hunk_note}."
        sha = await self.git.commit(kept, f"{body}\n\n{self._trailer_block()}\n")
        self.committed, self.reviewed_tree = sha, now
        if self.evidence:
            self.evidence.checked_on(sha, now)
        self._decided(
            ctx, ReviewDecided(decision="accept", reason=decision.reason, files=kept, commit=sha)
        )
        text = f"Accepted and committed {sha[:10]} ({len(kept)} file(s): {', '.join(kept)})."
        if dropped:
            text += f"\nThe user dropped {', '.join(dropped)} (restored): {decision.reason or 'no reason given'}."
        if hunk_note:
            text += f"\nThe user dropped these changes (undone, not committed): {hunk_note}: {decision.reason or 'no reason given'}."
        if edits:
            return ToolResult(text + edits.for_model)
        return ToolResult(text + "\nEnd with the RESULT line.")

    async def _drop_hunks(self, refs: list[HunkRef], files: list[str]) -> tuple[list[str], str]:
        """Undo the chosen hunks in the working tree. Returns the files that lost every hunk
        (to be restored whole, which also removes a file the run created) and what was undone."""
        if not refs:
            return [], ""
        raw, _ = await self.git.diff(self.base_tree, files)
        parsed = parse_diff(raw)
        whole: list[str] = []
        partial: set[HunkRef] = set()
        for patch in parsed.files:
            chosen = {h.ref for h in patch.hunks if h.ref in set(refs)}
            if chosen and len(chosen) == len(patch.hunks):
                whole.append(patch.path)
            else:
                partial |= chosen
        if partial:
            await self.git.unapply(patch_of(parsed, partial))
        return whole, ", ".join(_describe(h) for h in parsed.hunks() if h.ref in partial)

    def _trailer_block(self) -> str:
        lines = [f"{k}: {v}" for k, v in self.trailers().items()]
        if self.checks and self.checks.configured:
            lines.append(f"Checks: {self.checks.summary()}")
        lines += [f"Criterion-{e.index + 1}: {e.line()}" for e in self._ledger()]
        return "\n".join(lines)

    async def _hand_edits(
        self, tree: str, now: str, dropped: list[str], ctx: ToolContext
    ) -> _HandEdits:
        """The reviewer changed the code: check it again and withdraw the evidence it touches."""
        diff, changed = await self.git.diff(tree, self.write_paths)
        edited = [f for f in changed if f not in dropped] or changed
        stale: list[int] = []
        if self.evidence:
            why = f"the reviewer changed {', '.join(edited)}"
            stale = self.evidence.after_hand_edit(tree, now, edited, why)
        if self.checks and self.checks.configured:
            ran = await self.checks.run("hand_edit", now)
            ctx.emit(ran)
            if not self.checks.passed(ran):
                refused = (
                    f"The reviewer changed {', '.join(edited)} before accepting, and with those "
                    f"changes the runner's checks fail.\n{self.checks.report(ran)}\nFix it, keeping "
                    "what the reviewer meant, verify again, then call git_commit again."
                )
                return _HandEdits(edited, stale, "", "", refused)
        note = f"\n\nThe reviewer changed {', '.join(edited)} before accepting; the commit holds their version."
        again = f"The evidence for criteria {stale} is stale: " if stale else ""
        for_model = (
            f"\nBefore accepting, the reviewer changed {', '.join(edited)}; the commit holds "
            f"their version (diff from what you proposed):\n{truncate(shown(diff), _HAND_DIFF_CHARS)}\n"
            f"{again}verify {'them' if stale else 'the change'} again on the committed code "
            "(report_criterion for each), then end with the RESULT line."
        )
        return _HandEdits(edited, stale, note, for_model)


@dataclass(frozen=True)
class _HandEdits:
    """What the reviewer changed, whose evidence that withdrew, and what to say about it."""

    files: list[str]
    stale: list[int]
    note: str
    for_model: str
    refused: str = ""


def _describe(hunk: Hunk) -> str:
    return f"{hunk.path} hunk {hunk.index + 1} (at line {hunk.new_start}, +{hunk.added}/-{hunk.removed})"
