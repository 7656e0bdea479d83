"""The trust question on a terminal: the list of what the repository's config asks for, y/N.

Only a terminal can answer (`cardrunner run` on a tty); without one the run is refused with the
same list (trust/gate.py), because a pipe or a CI job cannot consent. An empty answer, EOF or
anything but yes is a no.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from cardrunner.trust.gate import TrustQuestion


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
