"""Sweep processes left behind by a cardrunner that died.

Builds, tests, the app and MCP servers run in their own process groups, so they survive a
SIGKILL of the process that started them. Every cardrunner process therefore keeps a ledger,
`.cardrunner/processes/<pid>.jsonl`, of the groups it starts (with each leader's start time, so a
recycled process id is never mistaken for ours). On start, the language server and `cardrunner
run` sweep the ledgers of owners that are gone: every recorded group still alive is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

from cardrunner.config.paths import StatePaths
from cardrunner.processes.groups import ProcessGroups, start_time


def keep_ledger(root: Path, groups: ProcessGroups) -> Path:
    """Record every group `groups` notes from now on in this process's ledger under `root`."""
    path = StatePaths(root).processes / f"{os.getpid()}.jsonl"

    def record(pgid: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"pgid": pgid, "start": start_time(pgid)}) + "\n")

    groups.add_listener(record)
    return path


def sweep(root: Path) -> list[int]:
    """Kill the groups recorded by owners that no longer run; returns the groups killed."""
    folder = StatePaths(root).processes
    killed: list[int] = []
    if not folder.is_dir():
        return killed
    for ledger in folder.glob("*.jsonl"):
        owner = int(ledger.stem) if ledger.stem.isdigit() else 0
        if owner == os.getpid() or (owner and start_time(owner) is not None):
            continue
        for line in ledger.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            pgid, start = int(entry.get("pgid", 0)), entry.get("start")
            if pgid > 1 and start is not None and start_time(pgid) == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(pgid)
        with contextlib.suppress(OSError):
            ledger.unlink()
    return killed
