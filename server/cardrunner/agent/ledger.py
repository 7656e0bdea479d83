"""The evidence ledger's lines: per criterion, the claim, the calls it cites and where it held.

Kept apart from the events (agent/events.py carries them in `CriterionReported` and
`RunFinished`) because the ledger is also what the verdict judges, the commit's trailers say and
a pull request's body lists: one shape for all of them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Citation(BaseModel):
    """One tool call a criterion's evidence rests on, and the text quoted from its result."""

    model_config = ConfigDict(frozen=True)
    call: str
    """The tool_use id of the call."""
    tool: str
    quote: str
    round: int = 0
    artifact: str | None = None
    """The call's result (text, screenshots) saved under the run's folder, workspace-relative."""


class LedgerEntry(BaseModel):
    """The evidence ledger's line for one criterion: the claim, what it rests on, where it held."""

    model_config = ConfigDict(frozen=True)
    index: int
    criterion: str
    status: Literal["pending", "verified", "failed", "stale"]
    claim: str = ""
    cites: list[Citation] = []
    commit: str | None = None
    """The commit the evidence was checked on (its tree is the one the cited calls saw)."""
    stale: str = ""
    """Why the evidence no longer holds (the code changed after it), if it does not."""
    level: Literal["", "app", "code"] = ""
    """In a run that can see a running app: checked in the app, or a code-level criterion
    (`code_by` says who marked it so). Empty in a run without an app."""
    code_by: Literal["", "card", "model"] = ""
    code_reason: str = ""
    """Why the model checked it in the code only (when it marked it so)."""
    screenshots: list[str] = []
    """What the verifying calls showed of the app, saved under the run's folder
    (workspace-relative): cardrunner's own files, never a path the model wrote."""

    def line(self) -> str:
        """One line for summaries and commit trailers."""
        quotes = "; ".join(f'{c.tool} {c.call}: "{_short(c.quote)}"' for c in self.cites)
        on = f" on {self.commit[:10]}" if self.commit else ""
        why = f" ({self.stale})" if self.stale else ""
        return f"{self.status}{self.where()}{on}{why}" + (f" — {quotes}" if quotes else "")

    def where(self) -> str:
        """` in the app`, or what makes it code-level, plainly; empty in a run without an app."""
        if self.level == "app":
            return " in the app"
        if self.level != "code":
            return ""
        if self.code_by == "card":
            return " in the code only (the card marks it (code))"
        return f" in the code only, NOT in the app (the model's choice: {_short(self.code_reason)})"


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
