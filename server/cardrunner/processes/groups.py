"""The process groups a run starts: the ledger they join, and the priority each session keeps.

Builds, tests, the app and stdio MCP servers each lead a process group of their own, so they can
be killed as a whole — and so they survive a SIGKILL of cardrunner. A `ProcessGroups` is handed
to everything that starts one (it is a port of the run, not a module global): it can say which
groups still live, kill them all at the end or at interpreter exit, and tell listeners (the
on-disk ledger a later cardrunner sweeps, run/liveness.py) about each new group.

A command's new session keeps the run's priority: its autogroup gets the starter's niceness.
Every build, test, app and stdio MCP server starts in a session of its own (`setsid`), so it can
be killed as a whole and holds no controlling terminal a sandboxed program could type into. With
the kernel's autogroup scheduling (on by default on desktop Linux) each session is also a
scheduling group of its own, and a nice value or `SCHED_IDLE` only ranks a process inside its
group: a run at nice 19 would start its build as an equal of the editor's whole session. So
in the child, after its `setsid` and before its `exec`, its new autogroup — shared with all it
starts — gets the nice value of the process that started it (`/proc/self/autogroup`). Raising
a nice value needs no privilege; nothing here can ever lower one.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
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


_NICE = re.compile(rb"nice\s+(-?\d+)")


def has_autogroups() -> bool:
    """Whether this kernel keeps autogroups. The file is there even for a process in the
    boot-time default group (a service, a container's first process), which reads it empty."""
    return Path("/proc/self/autogroup").exists()


def autogroup_nice(pid: int) -> int | None:
    """The nice value of `pid`'s autogroup; None where there are no autogroups or the process
    is in the default group (the root of scheduling, where nice values rank among all others).
    """
    try:
        found = _NICE.search(Path(f"/proc/{pid}/autogroup").read_bytes())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def follow_priority() -> Callable[[], None] | None:
    """What a new child runs between its `setsid` and its `exec` (`preexec_fn`): give its new
    autogroup this process's nice value. None when there is nothing to do (no autogroups, or
    this process is not lowered), so the common start keeps Python's faster spawn path.

    Done in the child, not by the parent after the start: a program that starts fast would run
    at the group's default until the parent got round to it."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    if ours <= 0 or not has_autogroups():  # the child's new group exists even when ours is the
        return None  # default group, which has no nice value of its own
    value = str(ours).encode()

    def lower_own_autogroup() -> None:  # in the child after fork: plain system calls only
        try:
            fd = os.open("/proc/self/autogroup", os.O_WRONLY)
        except OSError:
            return
        try:
            os.write(fd, value)
        except OSError:
            pass
        finally:
            os.close(fd)

    return lower_own_autogroup


def follow_priority_of(pid: int) -> None:
    """The same for a child already started (where the spawner takes no `preexec_fn`): a
    long-lived server runs its first milliseconds at its group's default. Only for a session
    leader: its autogroup is its own, never the one this process and the editor are in."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        leader = os.getsid(pid) == pid
    except OSError:
        return
    theirs = autogroup_nice(pid)
    if not leader or theirs is None or theirs >= ours:
        return
    with contextlib.suppress(OSError):  # gone already, or a kernel that refuses: keep going
        Path(f"/proc/{pid}/autogroup").write_text(str(ours))
