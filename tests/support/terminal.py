"""`cardrunner run` in a subprocess whose terminal review is answered as a person would: wait
for the question, change files if the scenario says so, type the answer.

The prompts end without a newline, so both streams are read in chunks by threads into one
buffer; `wait_for` blocks on a condition until a text appears once more than it had (or fails
with the whole output after the time-out or once the process ended).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO


class TerminalRun:
    """One `cardrunner` process with a scripted person at its terminal."""

    def __init__(self, root: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cardrunner", *args],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._out = bytearray()
        self._taken: dict[str, int] = {}
        self._changed = threading.Condition()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._pump, args=(s,), daemon=True)
            for s in (self.proc.stdout, self.proc.stderr)
        ]
        for reader in self._readers:
            reader.start()

    def _pump(self, stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), 65536):
            with self._changed:
                self._out += chunk
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return self._out.decode("utf-8", errors="replace")

    def wait_for(self, text: str, seconds: float = 120) -> str:
        """The output once `text` appeared once more than it did for earlier calls (the two
        streams interleave in any order, so no position in the output is relied on)."""
        needle = text.encode()
        want = self._taken.get(text, 0) + 1

        def found() -> bool:
            return self._out.count(needle) >= want or self.proc.poll() is not None

        with self._changed:
            self._changed.wait_for(found, timeout=seconds)
            if self._out.count(needle) < want:
                shown = self._out.decode("utf-8", errors="replace")
                raise AssertionError(f"never saw {text!r} (time-out or exit); output:\n{shown}")
            self._taken[text] = want
            return self._out.decode("utf-8", errors="replace")

    def answer(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self, seconds: float = 120) -> int:
        """Wait for the process to end; its exit status."""
        code = self.proc.wait(timeout=seconds)
        for reader in self._readers:
            reader.join(timeout=seconds)
        return code
