"""The review as `session/request_permission`: the diffs and the evidence, allow or reject.

The permission request carries the review as a tool call of its own, with one diff per changed
file (`{type: "diff", path, oldText, newText}`, the "before" read from the run's base tree) and
the commit message, the runner's checks, the evidence ledger and any warning as text. Allow
commits. ACP v1 cannot carry a reason with the answer, so a reject asks for one: the session
ends the prompt turn and the client's next prompt is the reason the model reads.
"""

from __future__ import annotations

from typing import Protocol

from acp import Client, start_tool_call, text_block, tool_content, tool_diff_content
from acp import update_tool_call as tool_update
from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    ToolCallLocation,
    ToolCallStatus,
    ToolCallUpdate,
)

from cardrunner.acp.toolcalls import read_text
from cardrunner.agent.review import ReviewDecision, ReviewRequest
from cardrunner.git.repo import GitRepo

ALLOW, REJECT = "commit", "reject"
OPTIONS = [
    PermissionOption(option_id=ALLOW, name="Accept & commit", kind="allow_once"),
    PermissionOption(option_id=REJECT, name="Reject (say why next)", kind="reject_once"),
]
DEFAULT_REASON = "rejected in the agent panel"

Content = ContentToolCallContent | FileEditToolCallContent


class ReviewHost(Protocol):
    """The session the review belongs to."""

    async def flushed(self) -> None:
        """Return once every event before the review has reached the client."""

    async def next_prompt(self, question: str) -> str:
        """End the prompt turn with `question`; the text of the client's next prompt."""


def review_text(request: ReviewRequest) -> str:
    """Everything a reviewer reads beside the diffs."""
    lines = [f"Commit message:\n{request.message}"]
    if request.checks:
        lines.append(f"Runner's checks: {request.checks}")
    if request.evidence:
        lines.append("Evidence:\n" + "\n".join(f"- {e}" for e in request.evidence))
    if request.flagged:
        lines.append(f"Changed configuration: {', '.join(request.flagged)}")
    if request.hidden:
        lines.append(f"Ignored by git, deleted on reject: {', '.join(request.hidden)}")
    lines += [f"WARNING: {w}" for w in request.warnings]
    return "\n\n".join(lines)


async def review_content(request: ReviewRequest) -> list[Content]:
    """One diff per changed file, then the review's text."""
    repo = GitRepo(request.root)
    shown: list[Content] = []
    for rel in request.files:
        before = await repo.show_file(request.base_tree, rel)
        path = (request.root / rel).resolve()
        shown.append(
            tool_diff_content(
                str(path),
                read_text(path) or "",
                before.decode("utf-8", "replace") if before is not None else None,
            )
        )
    shown.append(tool_content(text_block(review_text(request))))
    return shown


class PermissionApprover:
    """The run's `Approver`: asks the ACP client, holds a reject until the reason comes."""

    def __init__(self, client: Client, session_id: str, host: ReviewHost) -> None:
        self._client = client
        self._session_id = session_id
        self._host = host
        self._asked = 0

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        await self._host.flushed()
        self._asked += 1
        call_id = f"cardrunner-review-{self._asked}"
        title = f"Review: commit {len(request.files)} file(s) for {request.card_title}"
        content = await review_content(request)
        locations = [ToolCallLocation(path=str(request.root / f)) for f in request.files]
        await self._client.session_update(
            self._session_id,
            start_tool_call(
                call_id, title, kind="edit", status="pending", content=content, locations=locations
            ),
        )
        call = ToolCallUpdate(
            tool_call_id=call_id,
            title=title,
            kind="edit",
            status="pending",
            content=content,
            locations=locations,
        )
        answer = await self._client.request_permission(
            session_id=self._session_id, tool_call=call, options=OPTIONS
        )
        allowed = isinstance(answer.outcome, AllowedOutcome) and answer.outcome.option_id == ALLOW
        status: ToolCallStatus = "completed" if allowed else "failed"
        await self._client.session_update(self._session_id, tool_update(call_id, status=status))
        if allowed:  # the warnings were in the request: allowing accepts them knowingly
            return ReviewDecision("accept", acknowledged=bool(request.warnings))
        reason = await self._host.next_prompt(
            "Rejected. Why? Your next message goes to the model as the reason."
        )
        return ReviewDecision("reject", reason.strip() or DEFAULT_REASON)
