"""Sweep processes left behind by a cardrunner that died.

Builds, tests, the app and MCP servers run in their own process groups, so they survive a
SIGKILL of the process that started them. Every cardrunner process therefore keeps a ledger,
`.cardrunner/processes/<pid>.jsonl`, of the groups it starts (with each leader's start time, so a
recycled process id is never mistaken for ours, and the machine's boot id, so a ledger from another
machine or an earlier boot never matches a process here). A ledger git tracks came with the
repository's files and is never read (run/liveness.py `own_files`). On start, the language server and `cardrunner
run` sweep the ledgers of owners that are gone: every recorded group still alive is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

from cardrunner.config.paths import StatePaths
from cardrunner.processes.groups import ProcessGroups, boot_id, start_time
from cardrunner.run.liveness import own_files


def keep_ledger(root: Path, groups: ProcessGroups) -> Path:
    """Record every group `groups` notes from now on in this process's ledger under `root`."""
    path = StatePaths(root).processes / f"{os.getpid()}.jsonl"

    def record(pgid: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            entry = {"pgid": pgid, "start": start_time(pgid), "boot": boot_id()}
            f.write(json.dumps(entry) + "\n")

    groups.add_listener(record)
    return path


def sweep(root: Path) -> list[int]:
    """Kill the groups recorded by owners that no longer run; returns the groups killed."""
    folder = StatePaths(root).processes
    killed: list[int] = []
    if not folder.is_dir():
        return killed
    for ledger in own_files(root, folder.glob("*.jsonl")):
        owner = int(ledger.stem) if ledger.stem.isdigit() else 0
        if owner == os.getpid() or (owner and start_time(owner) is not None):
            continue
        for pgid in _ours(ledger):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        with contextlib.suppress(OSError):
            ledger.unlink()
    return killed


def _ours(ledger: Path) -> list[int]:
    """The groups of `ledger` that are still the very processes it recorded: same boot of this
    machine, same leader start time."""
    found: list[int] = []
    boot = boot_id()
    for line in ledger.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            pgid, start = int(entry.get("pgid", 0)), entry.get("start")
        except (ValueError, TypeError, AttributeError):
            continue
        same_boot = boot is not None and entry.get("boot") == boot
        if pgid > 1 and same_boot and start is not None and start_time(pgid) == start:
            found.append(pgid)
    return found
