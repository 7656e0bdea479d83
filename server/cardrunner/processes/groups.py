"""The process groups a run started: the ledger every command, the app and MCP servers join.

Builds, tests, the app and stdio MCP servers each lead a process group of their own, so they can
be killed as a whole — and so they survive a SIGKILL of cardrunner. A `ProcessGroups` is handed
to everything that starts one (it is a port of the run, not a module global): it can say which
groups still live, kill them all at the end or at interpreter exit, and tell listeners (the
on-disk ledger a later cardrunner sweeps, run/sweep.py) about each new group.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path


def process_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a zombie has exited; it waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return fields is None or fields[0] != "Z"


def group_alive(pgid: int) -> bool:
    """True while any process of the group exists and is not a zombie waiting to be reaped.

    The leader may have exited while its children live on, so every process is looked at."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        fields = _stat_fields(entry / "stat") if entry.name.isdigit() else None
        if fields and len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (field 22 of /proc/<pid>/stat), or None if it is gone.

    A pid can be reused; a pid with the start time we recorded is the process we started."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return None if fields is None or fields[0] == "Z" else fields[19]


def boot_id() -> str | None:
    """This boot's random id (Linux), which no other machine or boot shares; None elsewhere.

    A start time alone is guessable (processes started at boot have small ones); a recorded
    process must also belong to this boot of this machine."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _stat_fields(path: Path) -> list[str] | None:
    """`state ppid pgrp …` of a /proc stat file: comm may hold spaces, so split after its ')'."""
    try:
        stat = path.read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


class ProcessGroups:
    """The process groups one run (or one test) started, and who wants to hear of new ones."""

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._listeners: list[Callable[[int], None]] = []
        self._at_exit = False

    def note(self, pgid: int) -> None:
        """Record a group we started; from now on it is killed at the latest at exit."""
        if not self._at_exit:
            atexit.register(self.kill_all)
            self._at_exit = True
        self._groups.add(pgid)
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(pgid)

    def forget(self, pgid: int) -> None:
        """The group is gone (its last member was reaped)."""
        self._groups.discard(pgid)

    def add_listener(self, listener: Callable[[int], None]) -> None:
        """Call `listener(pgid)` for every group noted from now on (the sweep's ledger)."""
        self._listeners.append(listener)

    def live(self) -> set[int]:
        """Groups we started that still have a living member (dead ones are forgotten)."""
        for pgid in list(self._groups):
            if not group_alive(pgid):
                self._groups.discard(pgid)
        return set(self._groups)

    def kill_all(self) -> None:
        """SIGKILL every group still alive (only those: a dead group's id may be reused)."""
        for pgid in self.live():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        self.live()

    def close(self) -> None:
        """The run is over: kill what is left and stop watching for the interpreter's exit."""
        self.kill_all()
        if self._at_exit:
            atexit.unregister(self.kill_all)
            self._at_exit = False
