"""One git process, started and awaited on a thread, so the event loop never waits for it.

Starting a process blocks its caller until the child has called `exec` (Python's spawn waits
for it, to report a failed `exec` as an exception). On the language server's loop that is a
pause of every request in flight: 0.7 ms a start on a quiet machine, several when the cores are
taken, and each git command is two starts (git's config listing first, `git/safety.py`). A
thread pays the pause instead; the loop keeps answering.

A caller that is cancelled still ends its git: the process is killed, also when the cancel
comes while it is being started.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GitOut:
    """What one git command left: its exit code, its output as bytes, its errors as text."""

    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace").strip()

    def items(self) -> list[str]:
        """NUL-separated output (`-z`) as strings."""
        return [p for p in self.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]


def _start(argv: Sequence[str], env: Mapping[str, str], feeds: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if feeds else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _kill_when_started(started: asyncio.Future[subprocess.Popen[bytes]]) -> None:
    """For a cancel that came while the process was being started: end it once it is."""
    if not started.cancelled() and started.exception() is None:
        proc = started.result()
        _kill(proc)
        asyncio.get_running_loop().run_in_executor(None, proc.wait)


async def run_git(argv: Sequence[str], env: Mapping[str, str], data: bytes | None) -> GitOut:
    """Run `argv` (git and its arguments) with `data` on its stdin; OSError if it cannot start."""
    loop = asyncio.get_running_loop()
    started = loop.run_in_executor(None, _start, argv, env, data is not None)
    try:
        proc = await asyncio.shield(started)
    except asyncio.CancelledError:
        started.add_done_callback(_kill_when_started)
        raise
    try:
        stdout, stderr = await asyncio.shield(loop.run_in_executor(None, proc.communicate, data))
    except BaseException:
        _kill(proc)  # its communicate, still on the thread, then returns and reaps it
        raise
    return GitOut(proc.returncode or 0, stdout, stderr.decode("utf-8", errors="replace").strip())
