"""`git_commit`: the one tool that commits, and only after the approver accepted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice, ReviewDecided, ReviewRequested
from cardrunner.agent.gate import ToolContext, ToolError, ToolResult
from cardrunner.agent.review import Approver, HunkRef, ReviewDecision, ReviewRequest
from cardrunner.config.display import shown
from cardrunner.tools.base import FunctionTool, schema
from cardrunner.tools.git import GitRepo
from cardrunner.tools.hunks import Hunk, parse_diff, patch_of
from cardrunner.tools.scope import is_config, review_header, secrets_in_diff


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
    committed: str | None = None
    last_decision: str | None = None
    """The review's last answer (accept, reject, no_commit): the verdict reads it."""

    def tool(self) -> FunctionTool:
        return FunctionTool(
            name="git_commit",
            description=(
                "Ask to commit everything this run changed in the write area. The user first "
                "reviews the diff and accepts or rejects it; a rejection comes back as this tool's "
                "result with the reason. First line of the message: 'card: <card title>'; then two "
                "or three sentences on what changed and how it was verified live."
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
                "Nothing changed in the write area since the run started; nothing to commit."
            )
        self._refuse_secrets(raw, ctx)
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
        )
        ctx.emit(ReviewRequested(message=message, files=files, diff=diff))
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
        return await self._accept(message, files, decision, ctx)

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
        self, message: str, files: list[str], decision: ReviewDecision, ctx: ToolContext
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
        trailer = "\n".join(f"{k}: {v}" for k, v in self.trailers().items())
        sha = await self.git.commit(kept, f"{message}\n\n{trailer}\n")
        self.committed = sha
        self._decided(
            ctx, ReviewDecided(decision="accept", reason=decision.reason, files=kept, commit=sha)
        )
        text = f"Accepted and committed {sha[:10]} ({len(kept)} file(s): {', '.join(kept)})."
        if dropped:
            text += f"\nThe user dropped {', '.join(dropped)} (restored): {decision.reason or 'no reason given'}."
        if hunk_note:
            text += f"\nThe user dropped these changes (undone, not committed): {hunk_note}: {decision.reason or 'no reason given'}."
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


def _describe(hunk: Hunk) -> str:
    return f"{hunk.path} hunk {hunk.index + 1} (at line {hunk.new_start}, +{hunk.added}/-{hunk.removed})"
