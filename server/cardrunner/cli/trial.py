"""`cardrunner check --try`: build and test once, on the untouched tree, under the run's sandbox.

A config can be valid and still fail every run: the sandbox refuses a write the toolchain
needs, the test command counts nothing the runner can read. Trying it costs one build and one
test run, exactly as a run's baseline would do them (same sandbox, same environment, same
argv), and prints what a run would start from: the checks' results, the tests counted, and
every write the sandbox refused, with the setting that fixes it.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from cardrunner.agent.events import ChecksRan
from cardrunner.config.paths import StatePaths
from cardrunner.config.settings import Settings
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.refusal import refusals
from cardrunner.processes.sandbox import SandboxUnavailable
from cardrunner.run.assembly import command_env, run_sandbox
from cardrunner.verify.builds import RunnerChecks


async def _checks(root: Path, settings: Settings, run_dir: Path) -> ChecksRan:
    sandbox = run_sandbox(settings, root, root, run_dir)
    env = command_env(run_dir)
    checks = RunnerChecks(root, settings.commands, ProcessGroups(), env, sandbox=sandbox)
    return await checks.run("baseline", "untouched")


def try_config(root: Path, settings: Settings) -> tuple[list[str], list[str]]:
    """(what the try found, the problems among it) for the workspace at `root`."""
    if not (settings.commands.build or settings.commands.test):
        return ["try: no build or test command configured: nothing to try"], []
    StatePaths(root).ensure()
    with tempfile.TemporaryDirectory(prefix="check-", dir=StatePaths(root).state) as tmp:
        try:
            ran = asyncio.run(_checks(root, settings, Path(tmp)))
        except SandboxUnavailable as exc:
            return [], [f"try: {exc}"]
    found: list[str] = []
    problems: list[str] = []
    for check in ran.checks:
        state = "ok" if check.ok else f"failed (exit {check.exit_code})"
        line = f"try: {check.kind} ({' '.join(check.argv)}): {state}"
        if check.kind == "test":
            line += (
                f", {check.tests_ran} tests ran"
                if check.tests_ran is not None
                else ", tests not counted (unknown runner output)"
            )
        (found if check.ok else problems).append(line)
        if not check.ok and check.tail:
            problems += [f"try:   {tail}" for tail in check.tail.splitlines()[-3:]]
        problems += [f"try: {check.kind}: {refusal}" for refusal in refusals(check.tail, root)]
    return found, problems
