"""The terminal's questions: the review as a coloured diff, and the trust question, y/N.

Besides yes and no, the reviewer may drop single hunks (`d`): the hunks are listed by number,
as the diff above shows them, and the ones picked are left out of the commit (`git.choice`).
Files may also be edited in another window while the question waits; the runner notices.

The approver writes the run's `⏸ review requested` line itself, before the diff and the
question: the live view hears of the request only when the tool next yields to the event loop,
which is after the question is already on the screen (`LiveView(asks=True)` leaves it out).

The trust question shows the list of what the repository's config asks for, and asks y/N. Only a
terminal can answer (`cardrunner run` on a tty); without one the run is refused with the same
list (trust/consent.py), because a pipe or a CI job cannot consent. An empty answer, EOF or
anything but yes is a no.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from cardrunner.agent.review import ReviewDecision, ReviewRequest
from cardrunner.git.hunks import Hunk, lines_of, parse_diff
from cardrunner.trust.consent import TrustQuestion


def review_requested(files: int) -> str:
    """The status line of a run that waits for its review, as the live view shows it too."""
    return f"  ⏸ review requested: {files} file(s)"


def colour_diff(diff: str, colour: bool) -> str:
    if not colour:
        return diff
    out = []
    for line in lines_of(diff):
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


def _numbers(answer: str, hunks: list[Hunk]) -> list[Hunk]:
    picked = {int(t) for t in answer.replace(",", " ").split() if t.isdigit()}
    return [h for n, h in enumerate(hunks, 1) if n in picked]


class TerminalApprover:
    """Shows a coloured diff and asks on the terminal. No terminal → reject, saying why."""

    def __init__(self, write: Callable[[str], object], read: Callable[[str], str] = input) -> None:
        self._write = write
        self._read = read

    async def _ask(self, prompt: str) -> str | None:
        try:
            return await asyncio.to_thread(self._read, prompt)
        except (EOFError, OSError):
            return None

    def _show(self, request: ReviewRequest) -> None:
        colour = sys.stderr.isatty()
        self._write(f"{review_requested(len(request.files))}\n")
        self._write(f"\n── review: {request.card_title} ── {len(request.files)} file(s)\n")
        self._write(colour_diff(request.diff, colour) + "\n")
        self._write(f"commit message:\n  {request.message.replace(chr(10), chr(10) + '  ')}\n")
        if request.checks:
            self._write(f"runner's checks: {request.checks}\n")
        for line in request.evidence:
            self._write(f"  {line}\n")
        for warning in request.warnings:
            self._write(f"WARNING: {warning}\n")

    async def review(self, request: ReviewRequest) -> ReviewDecision:
        self._show(request)
        hunks = parse_diff(request.diff).hunks()
        ask = "Accept anyway" if request.warnings else "Accept"
        options = "[y]es / [n]o" + (" / [d]rop hunks" if hunks else "")
        dropped: list[Hunk] = []
        while True:
            keeping = f", without {len(dropped)} dropped hunk(s)" if dropped else ""
            answer = await self._ask(f"{ask} & commit{keeping}? {options}: ")
            if answer is None:
                return ReviewDecision(
                    "reject", "no one answered the review (no terminal); use --yes"
                )
            choice = answer.strip().lower()
            if choice in ("d", "drop") and hunks:
                dropped = await self._pick(hunks)
            elif choice in ("y", "yes"):  # after the warnings: knowingly
                return await self._accepted(dropped, bool(request.warnings))
            else:
                reason = (await self._ask("Why? (the model reads this): ") or "").strip()
                return ReviewDecision("reject", reason or "rejected by the user")

    async def _accepted(self, dropped: list[Hunk], warned: bool) -> ReviewDecision:
        if not dropped:
            return ReviewDecision("accept", acknowledged=warned)
        why = (await self._ask("Why drop them? (the model reads this): ") or "").strip()
        return ReviewDecision(
            "accept", why, drop_hunks=[h.ref for h in dropped], acknowledged=warned
        )

    async def _pick(self, hunks: list[Hunk]) -> list[Hunk]:
        for number, hunk in enumerate(hunks, 1):
            self._write(f"  {number}. {hunk.describe()}\n")
        answer = await self._ask("Drop which hunks? (numbers, e.g. 1 3; empty keeps all): ")
        return _numbers(answer or "", hunks)


class TerminalTrust:
    """`TrustAsker` that asks on the terminal."""

    def __init__(self, write: Callable[[str], object], read: Callable[[str], str] = input) -> None:
        self._write = write
        self._read = read

    async def ask(self, question: TrustQuestion) -> bool:
        self._write(question.text().rsplit("\n", 1)[0] + "\n")
        try:
            answer = await asyncio.to_thread(self._read, "Trust this repository and run? [y/N] ")
        except (EOFError, OSError):
            return False
        return answer.strip().lower() in ("y", "yes")
