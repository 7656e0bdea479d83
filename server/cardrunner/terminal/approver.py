"""The terminal's approver: a coloured diff and a question on the terminal."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from cardrunner.agent.review import ReviewDecision, ReviewRequest


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
        if request.checks:
            self._write(f"runner's checks: {request.checks}\n")
        for line in request.evidence:
            self._write(f"  {line}\n")
        for warning in request.warnings:
            self._write(f"WARNING: {warning}\n")
        ask = "Accept anyway" if request.warnings else "Accept"
        try:
            answer = await asyncio.to_thread(self._read, f"{ask} & commit? [y]es / [n]o: ")
        except (EOFError, OSError):
            return ReviewDecision("reject", "no one answered the review (no terminal); use --yes")
        if answer.strip().lower() in ("y", "yes"):  # after the warnings: knowingly
            return ReviewDecision("accept", acknowledged=bool(request.warnings))
        try:
            reason = await asyncio.to_thread(self._read, "Why? (the model reads this): ")
        except (EOFError, OSError):
            reason = ""
        return ReviewDecision("reject", reason.strip() or "rejected by the user")
