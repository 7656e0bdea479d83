"""The `run_priority` setting made real: how far a run's worker, and all it starts, yields the CPU.

Every worker (the warm spare too) starts at the default, `low` (`NICENESS` in `workers/program.py`,
relative to the server), because a spare is started before anyone knows which run it will play.
When the run's `start` message arrives the worker lowers itself further if the run's settings
ask for it. Lowering is the only direction there is: an unprivileged process may raise its nice
value and enter `SCHED_IDLE`, but never undo either, so no setting here can be above the default
— a `normal` priority would need a worker the spare could never be.

Linux keeps the nice value and the scheduling policy per thread, and a new thread or process
inherits them from the one that makes it: so every thread the worker already has is lowered,
and whatever the run starts later (builds, tests, the app, MCP servers) is born lowered.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cardrunner.config.settings import RunPriority


@dataclass(frozen=True)
class Priority:
    """What one `run_priority` value asks of the scheduler."""

    nice: int
    """The nice value a run's threads are raised to, at least (never lowered back)."""
    idle: bool
    """`SCHED_IDLE`: CPU only when nothing at normal priority wants it (Linux only)."""


PRIORITIES: dict[RunPriority, Priority] = {
    "low": Priority(nice=10, idle=False),
    "lowest": Priority(nice=19, idle=False),
    "idle": Priority(nice=19, idle=True),
}
"""Measured with eight CPU-bound runs on two cores (bench/RESULTS.md): the editor's codeLens p99
is 11.6× idle at `low`, 5.9× at `lowest`, 2.3× at `idle` — and the run gets correspondingly less
CPU whenever anything else is busy, which is why `low` is the default."""


def _threads() -> list[int]:
    """This process's thread ids (Linux); elsewhere 0, which the calls read as the process."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return [0]
    return [int(t.name) for t in tasks.iterdir() if t.name.isdigit()]


def lower(name: RunPriority) -> None:
    """Schedule every thread of this process at `name`'s priority or lower; never raise it.

    A thread that ended meanwhile, or a platform without the call, leaves the rest as they
    are: the run still plays, only less politely."""
    want = PRIORITIES[name]
    for tid in _threads():
        with contextlib.suppress(OSError):
            if os.getpriority(os.PRIO_PROCESS, tid) < want.nice:
                os.setpriority(os.PRIO_PROCESS, tid, want.nice)
        if want.idle and sys.platform == "linux":
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
