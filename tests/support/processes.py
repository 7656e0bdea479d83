"""Which processes live, and waiting for them to end: the leak checks of the MCP and UI server
tests, and the worker a killed language server leaves to end its run."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_gone(pids: list[int], alive: Callable[[int], bool], seconds: float = 15.0) -> list[int]:
    """The pids still `alive` after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it has exited and only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children(pid: int) -> list[int]:
    """Live direct children of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found
