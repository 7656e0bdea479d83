"""Task runners' prefixes, ctest's executables and the switches that make go and ctest count.

Interleaved package output (turbo, pnpm -r, lerna and nx run packages in parallel) is generated
here over summaries of every runner and must add up exactly; lines that only look like a prefix
(a C failure `calc.c:12: FAILED:`, jest's `Tests:`) must stay where their reader finds them. The
C++ frameworks and go are also run for real where installed (apt's cmake, libgtest-dev, catch2
and golang-go): deleting one test inside an executable lowers the count by one.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.verify.runneroutput import by_prefix, counting_argv
from cardrunner.verify.testcounts import read_counts

DATA = Path(__file__).parents[2] / "data" / "runner_output"


def test_each_task_runner_s_packages_are_found() -> None:
    packages = {
        "mono_turbo.txt": ["@acme/a:test", "@acme/b:test"],
        "mono_pnpm_r.txt": ["packages/a test", "packages/b test"],
        "mono_lerna.txt": ["@acme/a", "@acme/b"],
        "mono_nx_stream.txt": ["@acme/a", "@acme/b"],
        "mono_nx.txt": [],
        "ctest_verbose.txt": ["1", "2", "3"],
    }
    for name, expected in packages.items():
        found = [prefix for prefix, _ in by_prefix((DATA / name).read_text())]
        assert found[0] == "" and sorted(found[1:]) == expected, name


def test_lines_that_only_look_like_a_prefix_stay() -> None:
    text = (
        "calc.c:12: FAILED:\n  REQUIRE( 1 == 2 )\ncalc.c:12: FAILED:\ncalc.c:12: FAILED:\n"
        "Tests:       1 failed, 2 passed, 3 total\nError: boom\nError: boom\nError: boom\n"
    )
    assert [p for p, _ in by_prefix(text)] == [""]
    count = read_counts(text).count
    assert count is not None and (count.ran, count.failed) == (3, 1)


def test_counting_argv_adds_the_switch_only_to_the_runner_itself() -> None:
    assert counting_argv(["go", "test", "./..."]) == ["go", "test", "-v", "./..."]
    assert counting_argv(["/usr/bin/go", "test"]) == ["/usr/bin/go", "test", "-v"]
    assert counting_argv(["go", "test", "-json", "./..."]) == ["go", "test", "-json", "./..."]
    assert counting_argv(["go", "vet", "./..."]) == ["go", "vet", "./..."]
    assert counting_argv(["ctest", "--test-dir", "build"]) == ["ctest", "-V", "--test-dir", "build"]
    assert counting_argv(["ctest", "--output-on-failure", "-VV"]) == [
        "ctest",
        "--output-on-failure",
        "-VV",
    ]
    assert counting_argv(["make", "test"]) == ["make", "test"]
    assert counting_argv([]) == []


def _summary(runner: str, passed: int, failed: int, skipped: int) -> list[str]:
    match runner:
        case "pytest":
            return [
                "collected",
                f"==== {failed} failed, {passed} passed, {skipped} skipped in 1s ====",
            ]
        case "jest":
            return [f"Tests:       {failed} failed, {skipped} skipped, {passed} passed, 9 total"]
        case "vitest":
            return [f" Tests  {failed} failed | {passed} passed | {skipped} skipped (9)"]
        case "cargo":
            return [
                f"test result: ok. {passed} passed; {failed} failed; {skipped} ignored; "
                "0 measured; 0 filtered out; finished in 0.00s"
            ]
        case _:
            return [
                "TAP version 13",
                f"# pass {passed}",
                f"# fail {failed}",
                f"# skipped {skipped}",
            ]


def _prefixed(style: str, package: str, lines: list[str]) -> list[str]:
    banner = f"> {package}@1.0.0 test"
    match style:
        case "turbo":
            return [f"{package}:test: {line}" for line in ["", banner, *lines]]
        case "pnpm":
            return [f"packages/{package} test$ run-tests"] + [
                f"packages/{package} test: {line}" for line in lines
            ]
        case _:  # lerna, nx --output-style=stream
            return [f"{package}: {line}" for line in [banner, *lines]]


_PACKAGES = st.lists(
    st.tuples(
        st.sampled_from(["pytest", "jest", "vitest", "cargo", "tap"]),
        st.integers(0, 300),
        st.integers(0, 20),
        st.integers(0, 20),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    packages=_PACKAGES,
    style=st.sampled_from(["turbo", "pnpm", "lerna"]),
    seed=st.integers(0, 2**32),
)
def test_interleaved_packages_add_up(
    packages: list[tuple[str, int, int, int]], style: str, seed: int
) -> None:
    """Each package's lines in order, the packages' lines shuffled together as parallel tasks
    write them: the count is the packages' sum, whatever the interleaving."""
    streams = [
        _prefixed(style, f"@acme/p{i}", _summary(*package)) for i, package in enumerate(packages)
    ]
    rng = random.Random(seed)
    lines: list[str] = ["• Running test in packages"]
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        lines.append(stream.pop(0))
    count = read_counts("\n".join(lines)).count
    assert count is not None
    assert count.passed == sum(p for _, p, _, _ in packages)
    assert count.failed == sum(f for _, _, f, _ in packages)
    assert count.skipped == sum(s for _, _, _, s in packages)


# Real runs where the toolchains are installed (CI installs them: .ci/run).

CMAKE = """cmake_minimum_required(VERSION 3.16)
project(calc CXX)
enable_testing()
find_package(GTest REQUIRED)
add_executable(gtest_calc gtest_calc.cpp)
target_link_libraries(gtest_calc GTest::gtest GTest::gtest_main)
add_test(NAME gtest_calc COMMAND gtest_calc)
add_executable(catch_calc catch_calc.cpp)
add_test(NAME catch_calc COMMAND catch_calc)
"""
GTEST = """#include <gtest/gtest.h>
TEST(Calc, Adds) { EXPECT_EQ(2 + 3, 5); }
TEST(Calc, Negative) { EXPECT_EQ(-1 + -1, -2); }
TEST(Calc, Zero) { EXPECT_EQ(0 + 0, 0); }
"""
CATCH = """#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
TEST_CASE("multiplies") { REQUIRE(2 * 3 == 6); }
TEST_CASE("zero") { REQUIRE(0 * 3 == 0); }
"""
_CPP = all(shutil.which(p) for p in ("cmake", "ctest", "c++")) and all(
    Path(p).exists() for p in ("/usr/include/gtest/gtest.h", "/usr/include/catch2/catch.hpp")
)


def _ctest(root: Path) -> str:
    subprocess.run(["cmake", "-S", ".", "-B", "build"], cwd=root, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "build"], cwd=root, check=True, capture_output=True)
    argv = counting_argv(["ctest", "--test-dir", "build"])
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
    return done.stdout + done.stderr


@pytest.mark.skipif(not _CPP, reason="cmake, GoogleTest or Catch2 is not installed")
def test_ctest_counts_the_tests_inside_each_executable(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    (tmp_path / "gtest_calc.cpp").write_text(GTEST)
    (tmp_path / "catch_calc.cpp").write_text(CATCH)
    before = read_counts(_ctest(tmp_path)).count
    assert before is not None and (before.ran, before.failed) == (5, 0), before
    (tmp_path / "gtest_calc.cpp").write_text(GTEST.replace("TEST(Calc, Zero)", "void zero()"))
    after = read_counts(_ctest(tmp_path)).count
    assert after is not None and after.ran == 4, "a deleted GoogleTest test is noticed"


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_plain_go_test_is_counted_once_cardrunner_adds_v(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/calc\n\ngo 1.19\n")
    (tmp_path / "calc_test.go").write_text(
        'package calc\n\nimport "testing"\n\nfunc TestA(t *testing.T) {}\n'
        'func TestB(t *testing.T) { t.Skip("later") }\n'
        'func TestC(t *testing.T) {\n\tt.Run("x", func(t *testing.T) {})\n}\n'
    )

    def run(argv: list[str]) -> str:
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        return done.stdout + done.stderr

    assert read_counts(run(["go", "test", "./..."])).count is None
    count = read_counts(run(counting_argv(["go", "test", "./..."]))).count
    assert count is not None and (count.ran, count.skipped) == (3, 1), count
