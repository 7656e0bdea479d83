"""Processes a dead cardrunner left behind are found and stopped by the next one."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.support.lsp import processes_with
from tests.support.project import cli, make_project, slow_tests, start_cli


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(
        (e / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and _pgrp(e) == pgid
    )


def _pgrp(entry: Path) -> int:
    try:
        return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return -1


def _slow_group(ledger: Path, marker: str) -> int | None:
    """The process group of the model's slow tests (its process carries `marker`), once the
    ledger records it; the runner's own quick checks come and go before it."""
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    groups = {json.loads(line).get("pgid") for line in lines if line.strip()}
    slow = {g for pid in processes_with(marker) if (g := _pgrp_of(pid)) is not None}
    return next(iter(slow & groups), None)


def _pgrp_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_the_next_run_sweeps_what_a_killed_one_left(tmp_path: Path) -> None:
    # Unsandboxed: in the sandbox a killed runner takes its commands with it (the next test).
    make_project(tmp_path, top_toml='sandbox = "off"\n')
    marker = f"sweep-{tmp_path.name}"
    transcript = slow_tests(tmp_path, marker)
    proc = start_cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    ledger = tmp_path / ".cardrunner/processes" / f"{proc.pid}.jsonl"
    deadline = time.monotonic() + 60
    while not (pgid := _slow_group(ledger, marker)):
        assert time.monotonic() < deadline, "the run never started its tests"
        time.sleep(0.05)
    assert group_alive(pgid)
    os.kill(proc.pid, signal.SIGKILL)  # the runner dies; its test process lives on in its own group
    proc.wait(10)
    assert group_alive(pgid)
    again = cli(
        tmp_path,
        "run",
        "cards/fix-add.md",
        "--replay",
        str(transcript),
        "--resume",
        "--yes",
        timeout=60,
    )
    assert "stopped 1 process group(s) left by a cardrunner that died" in again.stderr, again.stderr
    deadline = time.monotonic() + 10
    while group_alive(pgid):
        assert time.monotonic() < deadline, "the leftover test process was not stopped"
        time.sleep(0.05)
    assert not ledger.exists()


def test_in_the_sandbox_a_killed_runner_leaves_nothing_behind(tmp_path: Path) -> None:
    make_project(tmp_path)
    marker = f"sandboxed-{tmp_path.name}"
    transcript = slow_tests(tmp_path, marker)
    proc = start_cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    ledger = tmp_path / ".cardrunner/processes" / f"{proc.pid}.jsonl"
    deadline = time.monotonic() + 60
    while not (ledger.exists() and ledger.read_text().strip()):
        assert time.monotonic() < deadline, "the run never started its tests"
        time.sleep(0.05)
    while not processes_with(marker):
        assert time.monotonic() < deadline, "the tests never ran"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # no cardrunner left to stop anything
    proc.wait(10)
    deadline = time.monotonic() + 10
    while processes_with(marker):  # bwrap dies with its parent, and its namespace with it
        assert time.monotonic() < deadline, "a sandboxed test process outlived its runner"
        time.sleep(0.05)
