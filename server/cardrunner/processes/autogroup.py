"""A command's new session keeps the run's priority: its autogroup gets the starter's niceness.

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

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

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
