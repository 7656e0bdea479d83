"""The lines that say why a command failed, picked from real runner output."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.verify.decisive import classify, decisive

DATA = Path(__file__).parents[2] / "data" / "runner_output"


def _why(name: str) -> list[str]:
    return decisive((DATA / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("cargo_erofs.txt", 'error: Read-only file system (os error 30) at path "/tmp/crun/'),
        ("cargo_compile_error.txt", "error[E0277]: cannot add `&str` to `i32`"),
        ("cargo_nofailfast.txt", "test integration_fails ... FAILED"),
        ("go_test.txt", "--- FAIL: TestFails (0.00s)"),
        ("jest.txt", "FAIL jt/math.test.js"),
        ("vitest.txt", "× fails"),
        ("mocha.txt", "1) fails"),
        ("node_test_tap.txt", "not ok 2 - fails"),
        ("pytest.txt", "E       RuntimeError: fixture broke"),
        ("unittest.txt", "ERROR: test_error (test_unit.MathTest.test_error)"),
    ],
)
def test_the_first_decisive_line_is_the_runners_own_failure(name: str, first: str) -> None:
    assert _why(name)[0].startswith(first)


def test_the_failure_and_its_message_are_both_shown() -> None:
    assert "assertion `left == right` failed: one and one" in _why("cargo_nofailfast.txt")
    assert "calc_test.go:13: Add(1, 1) = 2, want 3" in _why("go_test.txt")
    assert "FAIL  vt/math.test.mjs > math > fails" in _why("vitest.txt")
    assert "● math › fails" in _why("jest.txt")


def test_passing_output_has_nothing_decisive() -> None:
    for name in ("cargo_pass.txt", "npm_test_vitest_mocha.txt"):
        assert _why(name) == [], name


def test_a_program_that_cannot_start_is_the_reason() -> None:
    why = decisive("", "No such file or directory: 'tsc'")
    assert why == ["No such file or directory: 'tsc'"]


def test_a_sandbox_refusal_comes_first_even_after_many_errors() -> None:
    noise = "\n".join(f"error: thing {i} went wrong" for i in range(30))
    output = f"{noise}\nOSError: [Errno 30] Read-only file system: '/w/.pytest_cache'\n"
    assert decisive(output)[0] == "OSError: [Errno 30] Read-only file system: '/w/.pytest_cache'"
    assert len(decisive(output)) == 8


@pytest.mark.parametrize(
    "line",
    [
        "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        "test parser::handles_errors ... ok",
        "   Start at  20:36:25",
        "20:36:25",
        "  ✓ reports an error when the file is missing",
        "# fail 0",
        "ok  \texample.com/calc/sub\t0.009s",
        "--- PASS: TestErrors (0.00s)",
        "tests/test_x.py::test_error PASSED",
    ],
)
def test_passing_lines_and_timestamps_are_not_problems(line: str) -> None:
    assert classify(line) is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("test result: FAILED. 1 passed; 1 failed; 0 ignored", "error"),
        ("src/app.ts:3:7 - error TS2322: Type 'string' is not assignable", "error"),
        ("main.c:10:5: missing semicolon", "error"),
        ("--- FAIL: TestAdd (0.00s)", "error"),
        ("warning: unused variable `x`", "warning"),
    ],
)
def test_failing_lines_are_problems(line: str, kind: str) -> None:
    assert classify(line) == kind
