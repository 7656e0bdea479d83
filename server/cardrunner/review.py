"""Review before commit: the diff of everything the run changed goes to an approver first.

`git_commit` is the only tool that can commit. It builds the diff against the write area's
state at run start (files written by the model and files changed by commands alike), emits a
`ReviewRequested` event and awaits the injected `Approver`: the CLI prompt, the editor, or a
test fake. Accept commits the allowed paths with trailers; a rejection goes back to the model as
the tool's result and the run continues. Nothing is committed without an accept.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from cardrunner.events import ReviewDecided, ReviewRequested
from cardrunner.redact import redact
from cardrunner.tools.base import FunctionTool, ToolContext, ToolError, ToolResult, schema
from cardrunner.tools.git import GitRepo


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


@dataclass(frozen=True)
class ReviewDecision:
    """accept (optionally dropping some files, with why), reject (with why), or no_commit."""

    decision: Literal["accept", "reject", "no_commit"]
    reason: str = ""
    drop: list[str] = field(default_factory=list)


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


def colour_diff(diff: str, colour: bool) -> str:
    if not colour:
        return diff
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            out.append(f"\x1b[1m{line}\x1b[0m")
        elif line.startswith("+"):
            out.append(f"\x1b[32m{line}\x1b[0m")
        elif line.startswith("-"):
            out.append(f"\x1b[31m{line}\x1b[0m")
        elif line.startswith("@@"):
            out.append(f"\x1b[36m{line}\x1b[0m")
        else:
            out.append(line)
    return "\n".join(out)


class TerminalApprover:
    """Shows a coloured diff and asks on the terminal. No terminal → reject, saying why."""

    def __init__(self, write: Callable[[str], object], read: Callable[[str], str] = input) -> None:
        self._write = write
        self._read = read

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        colour = sys.stderr.isatty()
        self._write(f"\n── review: {request.card_title} ── {len(request.files)} file(s)\n")
        self._write(colour_diff(request.diff, colour) + "\n")
        self._write(f"commit message:\n  {request.message.replace(chr(10), chr(10) + '  ')}\n")
        try:
            answer = await asyncio.to_thread(self._read, "Accept & commit? [y]es / [n]o: ")
        except (EOFError, OSError):
            return ReviewDecision("reject", "no one answered the review (no terminal); use --yes")
        if answer.strip().lower() in ("y", "yes"):
            return ReviewDecision("accept")
        try:
            reason = await asyncio.to_thread(self._read, "Why? (the model reads this): ")
        except (EOFError, OSError):
            reason = ""
        return ReviewDecision("reject", reason.strip() or "rejected by the user")


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
    committed: str | None = None

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
        message = redact(args["message"].strip())
        diff, files = await self.git.diff(self.base_tree, self.write_paths)
        diff = redact(diff)
        if not files:
            raise ToolError(
                "Nothing changed in the write area since the run started; nothing to commit."
            )
        request = ReviewRequest(
            run_id=self.run_id,
            card_title=self.card_title,
            card_path=self.card_path,
            root=self.git.root,
            message=message,
            files=files,
            diff=diff,
            base_tree=self.base_tree,
        )
        ctx.emit(ReviewRequested(message=message, files=files, diff=diff))
        decision = await self.approver.review(request)
        if decision.decision == "reject":
            reason = decision.reason or "rejected in the review"
            ctx.emit(ReviewDecided(decision="reject", reason=reason, files=files))
            return ToolResult(
                f"The user REJECTED the changes: {reason}\nNothing was committed; your changes are "
                "still in the working tree. Address this, verify again, then call git_commit again."
            )
        if decision.decision == "no_commit":
            ctx.emit(ReviewDecided(decision="no_commit", reason=decision.reason, files=files))
            return ToolResult(
                "The user reviewed the diff; committing is switched off for this run. Do not call "
                "git_commit again: end now with RESULT: done."
            )
        return await self._accept(message, files, decision, ctx)

    async def _accept(
        self, message: str, files: list[str], decision: ReviewDecision, ctx: ToolContext
    ) -> ToolResult:
        dropped = [f for f in decision.drop if f in files]
        if dropped:
            await self.git.restore(self.base_tree, dropped)
        kept = [f for f in files if f not in dropped]
        if not kept:
            ctx.emit(
                ReviewDecided(
                    decision="reject", reason=decision.reason or "all files dropped", files=files
                )
            )
            return ToolResult(
                f"The user dropped every file ({decision.reason or 'no reason given'}); nothing was committed."
            )
        trailer = "\n".join(f"{k}: {v}" for k, v in self.trailers().items())
        sha = await self.git.commit(kept, f"{message}\n\n{trailer}\n")
        self.committed = sha
        ctx.emit(ReviewDecided(decision="accept", reason=decision.reason, files=kept, commit=sha))
        text = f"Accepted and committed {sha[:10]} ({len(kept)} file(s): {', '.join(kept)})."
        if dropped:
            text += f"\nThe user dropped {', '.join(dropped)} (restored): {decision.reason or 'no reason given'}."
        return ToolResult(text + "\nEnd with the RESULT line.")
