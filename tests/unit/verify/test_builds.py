"""The runner's own checks with real test runners: the count guard and known failures for each.

Each test runs a real runner (node --test and cargo when installed, pytest and unittest always)
on a small project in tmp_path, at the start and after a change, the way a run does.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cardrunner.config.settings import Commands
from cardrunner.processes.groups import ProcessGroups
from cardrunner.verify.builds import RunnerChecks
from tests.support.commitparts import no_sandbox

PY = sys.executable
node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")


def _checks(root: Path, test: list[str], **extra: object) -> RunnerChecks:
    commands = Commands(test=test, **extra)  # type: ignore[arg-type]
    return RunnerChecks(root, commands, ProcessGroups(), {}, no_sandbox(root))


def _node_tests(root: Path, *tests: str) -> None:
    body = "\n".join(tests)
    (root / "a.test.mjs").write_text(f"import test from 'node:test';\n{body}\n")


@node
async def test_a_skipped_node_test_is_a_drop_even_when_another_is_added(tmp_path: Path) -> None:
    ok = "test('one', () => {});"
    _node_tests(tmp_path, ok, "test('two', () => {});")
    checks = _checks(tmp_path, ["node", "--test"])
    await checks.run_baseline("t0")
    assert (checks.baseline, checks.baseline_skipped) == (2, 0)
    _node_tests(tmp_path, ok, "test('two', { skip: true }, () => {});", "test('three', () => {});")
    ran = await checks.run("commit", "t1")
    assert ran.ok and ran.tests_ran == 2
    assert (
        drop := checks.drop(ran)
    ) is not None and "skipped than at the start of the run (0 → 1)" in drop
    assert checks.failure("t1") is not None
    assert "2 ran (2 at start), 1 skipped · counted from tap" in checks.summary()


@node
async def test_node_failures_at_the_start_are_known_and_new_ones_are_not(tmp_path: Path) -> None:
    bad = "test('bad', () => { throw new Error('old'); });"
    _node_tests(tmp_path, "test('ok', () => {});", bad)
    checks = _checks(tmp_path, ["node", "--test"])
    start = await checks.run_baseline("t0")
    assert start is not None and not start.ok and checks.known_failures == ["bad"]
    _node_tests(tmp_path, "test('ok', () => {});", bad, "test('new', () => {});")
    assert checks.passed(await checks.run("commit", "t1"))
    _node_tests(tmp_path, "test('ok', () => { throw new Error('new'); });", bad)
    ran = await checks.run("commit", "t2")
    assert not checks.passed(ran)
    assert ran.checks[0].failures == ["bad", "ok"]
    assert "not ok 1 - ok" in "\n".join(ran.checks[0].why)


@cargo
async def test_a_deleted_cargo_test_is_a_drop_across_every_test_binary(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (tmp_path / "src" / "lib.rs").write_text(
        "/// ```\n/// assert_eq!(c::one(), 1);\n/// ```\npub fn one() -> i32 { 1 }\n"
        "#[cfg(test)] mod t { #[test] fn a() {} }\n"
    )
    (tmp_path / "tests" / "it.rs").write_text("#[test] fn x() {}\n#[test] fn y() {}\n")
    checks = _checks(tmp_path, ["cargo", "test", "--offline"])
    await checks.run_baseline("t0")
    assert checks.baseline == 4  # unit, integration and doc-tests; not the doc-tests' 1
    (tmp_path / "tests" / "it.rs").write_text("#[test] fn x() {}\n")
    ran = await checks.run("commit", "t1")
    assert ran.ok and checks.drop(ran) == (
        "fewer tests ran than at the start of the run (4 → 3): "
        "a test was deleted, skipped or deselected"
    )


async def test_an_unknown_runner_is_named_in_the_summary_not_silently_passed(
    tmp_path: Path,
) -> None:
    checks = _checks(tmp_path, [PY, "-c", "print('all good')"])
    await checks.run_baseline("t0")
    ran = await checks.run("commit", "t1")
    assert checks.baseline is None and checks.drop(ran) is None
    assert (
        checks.uncounted(ran)
        == "tests not counted (unknown runner output): a deleted test would not be noticed"
    )
    assert (
        checks.summary()
        == "test ok, tests not counted (unknown runner output): a deleted test would not be noticed"
    )


async def test_a_count_lost_after_the_start_blocks_done(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def test_a(): pass\n")
    checks = _checks(tmp_path, [PY, "-m", "pytest", "-p", "no:cacheprovider"])
    await checks.run_baseline("t0")
    assert checks.baseline == 1
    checks.commands = Commands(test=[PY, "-c", "print('ok')"])
    ran = await checks.run("commit", "t1")
    assert (drop := checks.drop(ran)) is not None and "could no longer be counted" in drop
    assert checks.uncounted(ran) is None  # a drop, not a note: it blocks Done
    assert checks.failure("t1") is not None


async def test_a_junit_report_written_by_the_run_is_counted(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import pytest\ndef test_a(): pass\n@pytest.mark.skip\ndef test_b(): pass\n"
    )
    argv = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=out/report.xml"]
    checks = _checks(tmp_path, argv, test_report="out/report.xml")
    await checks.run_baseline("t0")
    assert (checks.baseline, checks.baseline_skipped) == (1, 1)
    ran = await checks.run("commit", "t1")
    assert ran.checks[0].runner == "junit"


async def test_a_stale_junit_report_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "report.xml").write_text('<testsuite><testcase name="old"/></testsuite>')
    old = 1_000_000_000
    os.utime(tmp_path / "report.xml", (old, old))
    (tmp_path / "test_a.py").write_text("def test_a(): pass\ndef test_b(): pass\n")
    checks = _checks(
        tmp_path, [PY, "-m", "pytest", "-p", "no:cacheprovider"], test_report="report.xml"
    )
    await checks.run_baseline("t0")
    assert checks.baseline == 2


async def test_a_failing_unittest_says_why_in_the_failure(tmp_path: Path) -> None:
    (tmp_path / "test_u.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n"
        "    def test_x(self): open('/proc/no-such-dir/file', 'w')\n"
    )
    checks = _checks(tmp_path, [PY, "-m", "unittest", "test_u"])
    ran = await checks.run("commit", "t1")
    assert ran.checks[0].failures == ["test_u.T.test_x"]
    why = checks.failure("t1")
    assert why is not None and "No such file or directory: '/proc/no-such-dir/file'" in why
