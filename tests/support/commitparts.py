"""What the `git_commit` tool works with, for a tool a test drives directly.

A run gives its commit tool the call log, the runner's checks and the evidence ledger. A test of
the tool alone gets them bare: a call log that never sees the write area change, checks with no
build or test configured (nothing runs before the review) and a ledger without criteria.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cardrunner.config.settings import Commands
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox
from cardrunner.tools.evidence import Evidence
from cardrunner.verify.builds import RunnerChecks
from cardrunner.verify.calls import CallLog, FixedState


def no_sandbox(root: Path) -> Sandbox:
    """`sandbox = "off"`: commands run in `root` itself, with the allow-listed environment."""
    return Sandbox("off", root, root / ".cardrunner" / "run")


class CommitParts(NamedTuple):
    calls: CallLog
    checks: RunnerChecks
    evidence: Evidence


def bare_parts(root: Path) -> CommitParts:
    """Nothing to check, no evidence to list: the tool goes straight to the review."""
    calls = CallLog(FixedState(), "fixed")
    checks = RunnerChecks(root, Commands(), ProcessGroups(), {}, no_sandbox(root))
    evidence = Evidence([], calls, True, root / ".cardrunner" / "evidence", root)
    return CommitParts(calls, checks, evidence)
