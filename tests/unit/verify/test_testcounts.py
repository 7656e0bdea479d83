"""Test counts read from real runner output: captured once from each runner, and run for real.

The files under tests/data/runner_output/ were produced by running each runner on a small
project with passing, failing and skipped tests (`cargo test`, `go test`, jest, vitest, mocha,
`node --test`, pytest, unittest, GoogleTest and Catch2 under ctest, and turbo, pnpm -r, lerna
and nx over a two-package workspace); only Unity's is written from its documented format. pytest, unittest, cargo and `node --test` are also run here for
real (cargo and node when installed) so a runner's new output format shows up as a failure.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.config.settings import TestRunner
from cardrunner.verify.runneroutput import plain
from cardrunner.verify.testcounts import RUNNERS, UNKNOWN, TestCount, read_counts

DATA = Path(__file__).parents[2] / "data" / "runner_output"

# file: (ran, passed, failed, skipped, runner, failed ids)
CAPTURED: dict[str, tuple[int, int, int, int, str, tuple[str, ...]]] = {
    "pytest.txt": (6, 4, 2, 1, "pytest", ("test_math.py::test_fails", "test_math.py::test_error")),
    "pytest_q.txt": (
        6,
        4,
        2,
        1,
        "pytest",
        ("test_math.py::test_fails", "test_math.py::test_error"),
    ),
    "pytest_subtests.txt": (88, 88, 0, 15, "pytest", ()),  # pytest 9: `3 subtests passed`
    "pytest_junit.xml": (5, 3, 2, 2, "junit", ("test_math::test_fails", "test_math::test_error")),
    "unittest.txt": (
        4,
        2,
        2,
        1,
        "unittest",
        ("test_unit.MathTest.test_error", "test_unit.MathTest.test_fails"),
    ),
    "unittest_v.txt": (
        4,
        2,
        2,
        1,
        "unittest",
        ("test_unit.MathTest.test_error", "test_unit.MathTest.test_fails"),
    ),
    "cargo_pass.txt": (7, 7, 0, 1, "cargo test", ()),
    "cargo_nofailfast.txt": (7, 6, 1, 1, "cargo test", ("tests/more.rs::integration_fails",)),
    "cargo_fail.txt": (4, 3, 1, 1, "cargo test", ("tests/more.rs::integration_fails",)),
    "go_test_v.txt": (6, 5, 1, 1, "go test", ("TestFails",)),
    "go_test_json.txt": (6, 5, 1, 1, "go test -json", ("example.com/calc.TestFails",)),
    "jest.txt": (3, 2, 1, 2, "jest", ("math › fails",)),
    "jest_tty.txt": (3, 2, 1, 2, "jest", ("math › fails",)),
    "jest_junit.xml": (4, 3, 1, 1, "junit", ("math fails",)),
    "vitest.txt": (3, 2, 1, 2, "vitest", ("vt/math.test.mjs > math > fails",)),
    "vitest_tty.txt": (3, 2, 1, 2, "vitest", ("vt/math.test.mjs > math > fails",)),
    "vitest_verbose.txt": (3, 2, 1, 2, "vitest", ("vt/math.test.mjs > math > fails",)),
    "vitest_junit.xml": (3, 2, 1, 2, "junit", ("vt/math.test.mjs::math > fails",)),
    "mocha.txt": (3, 2, 1, 2, "mocha", ("math fails",)),
    "mocha_tty.txt": (3, 2, 1, 2, "mocha", ("math fails",)),
    "mocha_xunit.xml": (3, 2, 1, 2, "junit", ("math::fails",)),
    "node_test_tap.txt": (5, 3, 2, 2, "tap", ("fails", "inner fails")),
    "node_test_spec_tty.txt": (5, 3, 2, 2, "tap", ("fails", "inner fails")),
    "node_test_junit.xml": (5, 3, 2, 2, "junit", ("test::fails", "test::inner fails")),
    "npm_test_vitest_mocha.txt": (3, 3, 0, 0, "vitest + mocha", ()),
    # GoogleTest 1.12 and Catch2 2.13 under CMake's ctest 3.25 (tests/unit/verify/test_runneroutput)
    "gtest.txt": (3, 2, 1, 2, "googletest", ("Calc.Fails",)),  # 1 skipped + 1 DISABLED_
    "catch2.txt": (3, 2, 1, 0, "catch2", ("fails",)),
    "ctest_verbose.txt": (7, 5, 2, 2, "googletest + catch2 + ctest", ("Calc.Fails", "fails")),
    "ctest_plain.txt": (3, 1, 2, 0, "ctest", ("gtest_calc", "catch_calc")),
    "ctest_output_on_failure.txt": (3, 1, 2, 0, "ctest", ("gtest_calc", "catch_calc")),
    # Unity's documented output (written by hand: Unity is not packaged where CI installs from)
    "unity.txt": (3, 2, 1, 1, "unity", ("test_sub",)),
    # one package of 3 passing tests, one of 1 passed, 1 failed, 1 skipped, under each task
    # runner (pnpm -r stopped package a when b failed: a printed no summary)
    "mono_turbo.txt": (5, 4, 1, 1, "tap", ("@acme/b:test: b fails",)),
    "mono_pnpm_r.txt": (2, 1, 1, 1, "tap", ("packages/b test: b fails",)),
    "mono_lerna.txt": (5, 4, 1, 1, "tap", ("@acme/b: b fails",)),
    "mono_nx_stream.txt": (5, 4, 1, 1, "tap", ("@acme/b: b fails",)),
    "mono_nx.txt": (5, 4, 1, 1, "tap", ("b fails",)),
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_captured_output_of_each_runner_is_counted(name: str) -> None:
    ran, passed, failed, skipped, runner, ids = CAPTURED[name]
    reading = read_counts((DATA / name).read_text(encoding="utf-8"))
    assert reading.count == TestCount(ran, passed, failed, skipped, ids, runner)


def test_every_captured_file_is_checked() -> None:
    uncounted = {"go_test.txt", "go_plain.txt", "cargo_erofs.txt", "cargo_compile_error.txt"}
    assert {p.name for p in DATA.iterdir()} == set(CAPTURED) | uncounted


def test_cargo_sums_every_test_binary_not_only_the_doc_tests() -> None:
    text = (DATA / "cargo_pass.txt").read_text()
    last = [line for line in text.splitlines() if line.startswith("test result:")][-1]
    assert read_counts(last).count is not None and read_counts(last).count.ran == 2  # type: ignore[union-attr]
    assert read_counts(text).count.ran == 7  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["go_test.txt", "go_plain.txt"])
def test_go_without_verbose_is_not_counted_and_says_how_to_fix_it(name: str) -> None:
    reading = read_counts((DATA / name).read_text())
    assert reading.count is None
    assert "add -v" in reading.why


@pytest.mark.parametrize("name", ["cargo_erofs.txt", "cargo_compile_error.txt"])
def test_output_without_a_summary_is_unknown(name: str) -> None:
    assert read_counts((DATA / name).read_text()) == read_counts("") == read_counts("all good")
    assert read_counts("all good").why == UNKNOWN


def test_colours_do_not_change_the_count() -> None:
    coloured = (DATA / "vitest.txt").read_text()
    assert "\x1b[" in coloured
    assert read_counts(coloured) == read_counts(plain(coloured))


def test_noise_between_and_inside_runs_is_tolerated() -> None:
    cargo = (DATA / "cargo_nofailfast.txt").read_text()
    mocha = (DATA / "mocha.txt").read_text()
    noisy = "\n".join(
        f"{line}\nwarning: 3 passed in the cache, 20:36:25 error" for line in cargo.splitlines()
    )
    total = read_counts(noisy + "\n" + mocha).count
    assert total is not None
    assert (total.ran, total.failed, total.runner) == (10, 2, "cargo test + mocha")


# Generated summaries: counts add up over any runners, in any order, between noise.

_NOISE = st.sampled_from(
    ["", "Compiling x v0.1.0", "   Start at  20:36:25", "npm warn deprecated", "> pkg@1.0.0 test"]
)


def _render(runner: str, passed: int, failed: int, skipped: int) -> str:
    match runner:
        case "pytest":
            items = [f"{failed} failed"] * bool(failed) + [f"{passed} passed"]
            items += [f"{skipped} skipped"] * bool(skipped)
            return f"==== {', '.join(items)} in 0.12s ===="
        case "unittest":
            state = f"FAILED (failures={failed}, skipped={skipped})" if failed else "OK"
            state += f" (skipped={skipped})" if skipped and not failed else ""
            return f"Ran {passed + failed + skipped} tests in 0.003s\n\n{state}"
        case "cargo":
            return (
                f"test result: ok. {passed} passed; {failed} failed; {skipped} ignored; "
                "0 measured; 0 filtered out; finished in 0.00s"
            )
        case "jest":
            return f"Tests:       {failed} failed, {skipped} skipped, {passed} passed, 9 total"
        case "vitest":
            return f"      Tests  {failed} failed | {passed} passed | {skipped} skipped (9)"
        case "mocha":
            return f"  {passed} passing (3ms)\n  {skipped} pending\n  {failed} failing"
        case _:
            return f"# tests 9\n# pass {passed}\n# fail {failed}\n# skipped {skipped}"


_RUNS = st.lists(
    st.tuples(
        st.sampled_from(["pytest", "unittest", "cargo", "jest", "vitest", "mocha", "tap"]),
        st.integers(0, 500),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(runs=_RUNS, noise=st.lists(_NOISE, min_size=7, max_size=7))
def test_generated_summaries_add_up(
    runs: list[tuple[str, int, int, int]], noise: list[str]
) -> None:
    output = "\n".join(f"{noise[i]}\n{_render(*run)}\n{noise[-i]}" for i, run in enumerate(runs))
    count = read_counts(output).count
    assert count is not None
    assert count.passed == sum(p for _, p, _, _ in runs)
    assert count.failed == sum(f for _, _, f, _ in runs)
    assert count.skipped == sum(s for _, _, _, s in runs)
    assert count.ran == count.passed + count.failed


# Real runs: the runners that need no download.


def _run(argv: list[str], cwd: Path) -> str:
    """stdout and stderr in one pipe, interleaved as written: as the runner's checks read them."""
    done = subprocess.run(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )
    return done.stdout


def test_pytest_run_for_real(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import pytest\n\ndef test_ok(): pass\n\ndef test_bad(): assert 0\n\n"
        "@pytest.mark.skip\ndef test_skip(): pass\n"
    )
    output = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], tmp_path)
    assert read_counts(output).count == TestCount(2, 1, 1, 1, ("test_a.py::test_bad",), "pytest")


def test_unittest_run_for_real(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(
        textwrap.dedent(
            """
            import unittest
            class T(unittest.TestCase):
                def test_ok(self): pass
                def test_bad(self): self.fail("no")
                @unittest.skip("later")
                def test_skip(self): pass
            """
        )
    )
    output = _run([sys.executable, "-m", "unittest", "test_b"], tmp_path)
    assert read_counts(output).count == TestCount(2, 1, 1, 1, ("test_b.T.test_bad",), "unittest")


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_run_for_real_sums_unit_integration_and_doc_tests(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (tmp_path / "src" / "lib.rs").write_text(
        "/// ```\n/// assert_eq!(c::one(), 1);\n/// ```\npub fn one() -> i32 { 1 }\n"
        "#[cfg(test)] mod t { #[test] fn a() {} #[test] #[ignore] fn b() {} }\n"
    )
    (tmp_path / "tests" / "it.rs").write_text("#[test] fn x() {}\n#[test] fn y() { panic!() }\n")
    output = _run(["cargo", "test", "--no-fail-fast", "--offline"], tmp_path)
    count = read_counts(output).count
    assert count == TestCount(4, 3, 1, 1, ("tests/it.rs::y",), "cargo test"), output


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_run_for_real(tmp_path: Path) -> None:
    (tmp_path / "a.test.mjs").write_text(
        "import test from 'node:test';\n"
        "test('ok', () => {});\ntest('bad', () => { throw new Error('x'); });\n"
        "test('later', { skip: true }, () => {});\n"
    )
    output = _run(["node", "--test"], tmp_path)
    assert read_counts(output).count == TestCount(2, 1, 1, 1, ("bad",), "tap"), output


NAMED = {
    "pytest.txt": "pytest",
    "unittest.txt": "unittest",
    "cargo_nofailfast.txt": "cargo",
    "go_test_v.txt": "go",
    "go_test_json.txt": "go",
    "jest.txt": "jest",
    "vitest.txt": "vitest",
    "mocha.txt": "mocha",
    "node_test_tap.txt": "node",
    "gtest.txt": "googletest",
    "catch2.txt": "catch2",
    "unity.txt": "unity",
    "ctest_verbose.txt": "ctest",
    "ctest_plain.txt": "ctest",
}
"""Captured output and the `test_runner` a user of that runner would name."""


@pytest.mark.parametrize(("name", "runner"), sorted(NAMED.items()))
def test_naming_the_runner_reads_the_same_count(name: str, runner: str) -> None:
    text = (DATA / name).read_text()
    assert read_counts(text, runner) == read_counts(text)
    others = [r for r in RUNNERS if RUNNERS[r] is not RUNNERS[runner] and r != "ctest"]
    for other in others if runner != "ctest" else []:  # (ctest's frameworks print inside it)
        # another runner's name never takes this output for its own
        assert read_counts(text, other).count is None, other


def test_a_named_runner_counts_only_its_own_summary() -> None:
    """npm test running vitest, then mocha: guessed, both count; named, only the one."""
    text = (DATA / "npm_test_vitest_mocha.txt").read_text()
    both, vitest = read_counts(text).count, read_counts(text, "vitest").count
    assert both is not None and vitest is not None
    assert vitest.runner == "vitest" and 0 < vitest.ran < both.ran
    missing = read_counts("all fine, says the custom runner\n", "cargo")
    assert missing.count is None
    assert missing.why == "no cargo summary in the output; test_runner = 'cargo'"


def test_a_package_prefixed_summary_is_read_for_the_named_runner() -> None:
    text = (DATA / "mono_turbo.txt").read_text()
    guessed = read_counts(text).count
    assert guessed is not None
    runner = guessed.runner.split(" + ")[0].split()[0]
    named = read_counts(text, {"cargo": "cargo", "tap": "node"}.get(runner, runner)).count
    assert named is not None and named.ran > 0


def test_the_settings_take_exactly_the_runners_cardrunner_reads() -> None:
    assert set(get_args(TestRunner)) == set(RUNNERS)
