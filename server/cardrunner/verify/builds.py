"""The runner's own checks: it builds and tests the exact tree it is about to commit, itself.

A model saying "the tests pass" is a claim; the configured build and test commands run by the
runner on the code that will be committed, after the last write, are a fact. Their exit codes and
output tails become evidence. The runner also counts the tests that ran (`testcounts`: every
common runner's summary, or the JUnit report `[commands] test_report` names) at the start of the
run and at every check, because the cheapest way to make a suite pass is to delete or skip the
test that fails: fewer tests run, more skipped, or a count that can no longer be read is shown in
the review and blocks Done unless the user accepts it knowingly. A suite whose output cannot be
counted at all is named as such in the review and the commit: the guard is never silently off.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Literal

from cardrunner.agent.events import CheckRun, ChecksRan
from cardrunner.config.paths import STATE_DIR
from cardrunner.config.settings import Commands
from cardrunner.git.repo import GitRepo
from cardrunner.processes.command import CommandResult, run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox
from cardrunner.verify.decisive import decisive
from cardrunner.verify.runneroutput import counting_argv, read_report
from cardrunner.verify.testcounts import UNKNOWN, Reading, from_junit, read_counts

NONE = Reading(None)
"""A build is not counted."""

_TAIL_LINES = 12
_TAIL_CHARS = 1500

Phase = Literal["baseline", "commit", "hand_edit"]


def _tail(output: str) -> str:
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    return "\n".join(lines[-_TAIL_LINES:])[-_TAIL_CHARS:]


def _check(kind: Literal["build", "test"], result: CommandResult, reading: Reading) -> CheckRun:
    output = result.spawn_error or result.output
    if result.timed_out:
        output += f"\n(timed out after {result.ms / 1000:.0f} s and was killed)"
    count = reading.count if kind == "test" else None
    return CheckRun(
        kind=kind,
        argv=result.argv,
        exit_code=None if result.spawn_error else result.exit_code,
        ok=result.ok,
        tail=_tail(output),
        tests_ran=count.ran if count else None,
        failures=sorted(set(count.failed_ids)) if count else [],
        skipped=count.skipped if count else None,
        runner=count.runner if count else "",
        uncounted=reading.why if kind == "test" else "",
        why=[] if result.ok else decisive(output, result.spawn_error),
    )


@dataclass(frozen=True)
class ChecksSoFar:
    """What the runner's checks knew before a resume; a new run's knows nothing yet."""

    baseline: int | None = None
    baseline_skipped: int | None = None
    known_failures: list[str] | None = None
    last: ChecksRan | None = None


@dataclass
class RunnerChecks:
    """Build and test as the runner runs them (configured argv, no extra arguments)."""

    root: Path
    commands: Commands
    groups: ProcessGroups
    """The run's process ledger: a check's process group is swept like every other."""
    env: dict[str, str]
    sandbox: Sandbox
    """The run's sandbox: the runner's checks are confined like the model's commands."""
    count: bool = True
    """Count the tests at the run's start (off with the evidence gate: nothing would use it)."""
    so_far: InitVar[ChecksSoFar] = ChecksSoFar()
    baseline: int | None = field(default=None, init=False)
    """Tests that ran at the start of the run."""
    baseline_skipped: int | None = field(default=None, init=False)
    """Tests skipped at the start of the run."""
    known_failures: list[str] | None = field(default=None, init=False)
    """Tests that already failed at the start (None: unknown, or the suite passed)."""
    last: ChecksRan | None = field(default=None, init=False)
    accepted_drops: set[str] = field(default_factory=set, init=False)
    """Trees on which the user accepted fewer tests knowingly."""

    def __post_init__(self, so_far: ChecksSoFar) -> None:
        self.baseline, self.baseline_skipped = so_far.baseline, so_far.baseline_skipped
        self.known_failures, self.last = so_far.known_failures, so_far.last

    @property
    def configured(self) -> bool:
        return bool(self.commands.build or self.commands.test)

    async def run_baseline(self, tree: str) -> ChecksRan | None:
        """Count the tests before the model changes anything; None when no test is configured."""
        if not self.commands.test or not self.count:
            return None
        check = await self._run_one("test", self.commands.test, "baseline")
        self.baseline, self.baseline_skipped = check.tests_ran, check.skipped
        self.known_failures = check.failures if not check.ok and check.failures else None
        return ChecksRan(
            phase="baseline",
            tree=tree,
            checks=[check],
            ok=check.ok,
            tests_ran=self.baseline,
            sees=self.sandbox.tree_note(),
        )

    async def run_exact(self, phase: Phase, tree: str, git: GitRepo) -> ChecksRan:
        """Build and test `tree` itself, checked out on its own: what a commit of that tree
        holds, whatever the working tree holds beside it (files the commit leaves out)."""
        async with self._checkout(tree, git) as folder:
            return await self.run(phase, tree, folder)

    @contextlib.asynccontextmanager
    async def _checkout(self, tree: str, git: GitRepo) -> AsyncIterator[Path]:
        """A fresh checkout of `tree`, where the sandbox lets checks write (the run's folder);
        what git ignores at the top of the workspace (`.venv`, `node_modules`) is linked in."""
        parent = self.sandbox.run_dir
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="exact-tree-", dir=parent) as tmp:
            folder = await git.checkout_tree(tree, Path(tmp) / "tree")
            await asyncio.to_thread(_link, self.root, folder, await git.ignored_tops())
            yield folder

    async def run(self, phase: Phase, tree: str, cwd: Path | None = None) -> ChecksRan:
        """Build, then test (if the build passed) the write area as it is now, known as `tree`
        (or the checkout of it in `cwd`)."""
        checks: list[CheckRun] = []
        for kind, argv in (("build", self.commands.build), ("test", self.commands.test)):
            if not argv or (checks and not checks[-1].ok):
                continue
            checks.append(await self._run_one(kind, argv, phase, cwd))  # type: ignore[arg-type]
        counted = next((c.tests_ran for c in checks if c.kind == "test"), None)
        self.last = ChecksRan(
            phase=phase,
            tree=tree,
            checks=checks,
            ok=all(c.ok for c in checks),
            tests_ran=counted,
            baseline=self.baseline,
        )
        return self.last

    async def _run_one(
        self, kind: Literal["build", "test"], argv: list[str], phase: Phase, cwd: Path | None = None
    ) -> CheckRun:
        started = time.time()
        folder = (cwd or self.root) / self.commands.folder  # a package's own folder
        result = await run_command(
            counting_argv(argv) if kind == "test" else argv,
            folder,
            self.commands.timeout_seconds,
            self._env(phase),
            groups=self.groups,
            sandbox=self.sandbox,
        )
        reading = self._reading(result, started, folder) if kind == "test" else NONE
        return _check(kind, result, reading)

    def _reading(self, result: CommandResult, started: float, folder: Path) -> Reading:
        """The JUnit report the test command wrote during this run, else its output."""
        if self.commands.test_report:
            report = folder / self.commands.test_report
            fresh = report.is_file() and report.stat().st_mtime >= started - 1
            cases = read_report(report) if fresh else None
            if cases is not None:
                return Reading(from_junit(cases))
        return read_counts(result.output, self.commands.test_runner)

    def only_known_failures(self, ran: ChecksRan) -> bool:
        """The tests failed, but only tests that failed at the start of the run too.

        The run did not cause them, and a card about something else could never end otherwise;
        the review says so. A failure the runner does not name is never taken as known.
        """
        bad = [c for c in ran.checks if not c.ok]
        known = set(self.known_failures or [])
        return bool(bad and known) and all(
            c.kind == "test" and c.failures and set(c.failures) <= known for c in bad
        )

    def passed(self, ran: ChecksRan) -> bool:
        """Build and tests hold: all passed, or only the start's failures remain."""
        return ran.ok or self.only_known_failures(ran)

    def _env(self, phase: Phase) -> dict[str, str]:
        """The commands' environment, plus `CARDRUNNER_CHECK` naming the runner's own run."""
        return {**self.env, "CARDRUNNER_CHECK": phase}

    def drop(self, ran: ChecksRan | None = None) -> str | None:
        """ "fewer tests ran …", "more tests were skipped …", or "the tests could no longer be
        counted …" against the run's start; None when the count held (or never was one)."""
        ran = ran or self.last
        test = _test_check(ran)
        if test is None or self.baseline is None:
            return None
        if test.tests_ran is None:
            return (
                f"the tests could no longer be counted ({test.uncounted or 'no count'}), though "
                f"{self.baseline} ran at the start of the run: the test output changed"
            )
        if test.tests_ran < self.baseline:
            return (
                f"fewer tests ran than at the start of the run ({self.baseline} → "
                f"{test.tests_ran}): a test was deleted, skipped or deselected"
            )
        if (test.skipped or 0) > (self.baseline_skipped or 0):
            return (
                f"more tests were skipped than at the start of the run "
                f"({self.baseline_skipped or 0} → {test.skipped}): a test was skipped"
            )
        return None

    def uncounted(self, ran: ChecksRan | None = None) -> str | None:
        """ "tests not counted (unknown runner output): a deleted test …" when neither the start nor this check could
        be counted: the review and the commit say the test-count guard could not work."""
        test = _test_check(ran or self.last)
        if test is None or test.tests_ran is not None or self.baseline is not None:
            return None
        return not_counted(test.uncounted)

    def failure(self, tree: str) -> str | None:
        """Why the checks that ran on `tree` do not hold; None if they hold or did not run on it."""
        last = self.last
        if last is None or last.tree != tree:
            return None
        if not self.passed(last):
            bad = next(c for c in last.checks if not c.ok)
            return f"the runner's {bad.kind} ({' '.join(bad.argv)}) failed: {_last_line(bad)}"
        if (drop := self.drop(last)) and tree not in self.accepted_drops:
            return drop + ", and the user did not accept that knowingly"
        return None

    def problem(self, tree: str) -> str | None:
        """Why build and tests do not hold on `tree`; None when they ran on it and passed."""
        if not self.configured:
            return None
        if self.last is None or self.last.tree != tree:
            return "the runner has not built and tested this code; git_commit does that"
        return self.failure(tree)

    def summary(self) -> str:
        """`build ok · test ok, 5 ran (5 at start), 1 skipped · counted from pytest` — for
        trailers and the review."""
        if self.last is None:
            return "not run"
        parts = [
            f"{c.kind} {'ok' if c.ok else f'failed (exit {c.exit_code})'}" for c in self.last.checks
        ]
        test = _test_check(self.last)
        if test is not None and test.tests_ran is not None:
            start = f" ({self.baseline} at start)" if self.baseline is not None else ""
            skipped = f", {test.skipped} skipped" if test.skipped else ""
            parts[-1] += f", {test.tests_ran} ran{start}{skipped} · counted from {test.runner}"
        elif test is not None:
            parts[-1] += ", " + not_counted(test.uncounted)
        return " · ".join(parts) or "nothing configured"

    def report(self, ran: ChecksRan) -> str:
        """What the model reads when the runner's own checks failed: why first, then the tail."""
        lines = [f"The runner built and tested the code you asked to commit: {self.summary()}."]
        for check in ran.checks:
            if not check.ok:
                lines.append(f"--- {check.kind}: {' '.join(check.argv)} (exit {check.exit_code})")
                shown = set(check.tail.splitlines())
                lines += [f"why: {w}" for w in check.why if w not in shown][:4]
                lines.append(check.tail)
        if drop := self.drop(ran):
            lines.append(drop + ".")
        return "\n".join(lines)


def not_counted(why: str | None) -> str:
    """What a run whose tests were not counted says, in the review, the commit and the CLI."""
    return f"tests not counted ({why or UNKNOWN}): a deleted test would not be noticed"


def counted(output: str, runner: str | None = None) -> str:
    """The runner's own count of a test run, first in `run_tests`'s result: the tail of the
    output may be one part of it (`cargo test` ends with its doc-tests), and this is the count
    the runner holds a change to (fewer tests than at the start is not Done)."""
    reading = read_counts(output, runner)
    if (n := reading.count) is None:
        return (
            f"Counted by the runner: no count ({reading.why}): a deleted test would not be noticed."
        )
    skipped = f", {n.skipped} skipped" if n.skipped else ""
    return (
        f"Counted by the runner: {n.ran} tests ran, {n.passed} passed, {n.failed} failed"
        f"{skipped} ({n.runner})."
    )


def counting(commands: Commands) -> list[str]:
    """How the tests are counted: the user's JUnit report, else their runner's summary, else
    the summary of whichever runner the output shows."""
    named = commands.test_runner
    ways = [f"the JUnit report {commands.test_report} (test_report)"] * bool(commands.test_report)
    ways += [f"{named}'s summary (test_runner)" if named else "the summary the output shows"]
    return ["tests counted from " + ", else ".join(ways)] if commands.test else []


def _test_check(ran: ChecksRan | None) -> CheckRun | None:
    return next((c for c in ran.checks if c.kind == "test"), None) if ran else None


def _link(root: Path, folder: Path, names: list[str]) -> None:
    """Link what git ignores at the top of `root` into the checkout `folder` (the state folder
    aside): a project's `.venv` or `node_modules` is needed to build it, never committed."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name != STATE_DIR and not os.path.lexists(folder / name):
            os.symlink(root / name, folder / name)


def _last_line(check: CheckRun) -> str:
    """The first decisive line (the error, not the last line of a traceback's noise)."""
    if check.why:
        return check.why[0]
    lines = check.tail.splitlines()
    return lines[-1] if lines else f"exit code {check.exit_code}"
