"""How many tests ran, passed, failed and were skipped, from each runner's own output or JUnit XML.

The test-count guard (fewer tests than at the start blocks Done) and the known-failures rule
(tests that already failed at the start may still fail) are only as good as this count. Each
runner prints its totals its own way, so there is one reader per format, each anchored on lines
only that runner prints: pytest's `1 failed, 3 passed in 0.12s`, unittest's `Ran 5 tests` with
its `FAILED (failures=1)`, every one of cargo's `test result:` lines (unit, integration and
doc-tests are separate binaries), go's `--- PASS:` lines (`-v`) or `-json` events, jest's
`Tests:`, vitest's `Tests  2 passed (3)`, mocha's `N passing`, TAP's `# pass N` (`node --test`),
GoogleTest's `[  PASSED  ] 2 tests.`, Catch2's `test cases: 3 | 2 passed`, Unity's
`3 Tests 1 Failures 1 Ignored`, ctest's `1/3 Test #1: name ... Passed` and JUnit XML. Every reader
runs on the output and what they find is summed: `npm test` running vitest then mocha is two
runners, one count. Colours and carriage returns are stripped first, and the lines a task runner
or ctest prefixes are read per prefix (`runneroutput.by_prefix`); anything else in between is
noise the anchors skip. Under ctest an executable whose framework printed its count is counted by
that count, any other by ctest's own line.

A test that was skipped did not run: `ran` counts only what executed, so skipping a failing test
lowers it (a GoogleTest `DISABLED_` test is skipped too). When no reader finds anything the count
is `None`, with the reason, and the runner says so in the review and the commit instead of
silently not guarding. Where the user's config names the runner (`test_runner`), only that
runner's reader is asked (`RUNNERS`): its count, or none, is never another runner's guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from cardrunner.verify.runneroutput import JunitCase, by_prefix, go_hint, junit_cases, plain

UNKNOWN = "unknown runner output"


@dataclass(frozen=True)
class TestCount:
    """One runner's totals (or several runners' summed); `ran` excludes skipped tests."""

    __test__ = False  # not a pytest test class, despite the name

    ran: int
    passed: int
    failed: int
    skipped: int
    failed_ids: tuple[str, ...]
    runner: str

    def __add__(self, other: TestCount) -> TestCount:
        runners = self.runner.split(" + ")
        return TestCount(
            ran=self.ran + other.ran,
            passed=self.passed + other.passed,
            failed=self.failed + other.failed,
            skipped=self.skipped + other.skipped,
            failed_ids=self.failed_ids + other.failed_ids,
            runner=" + ".join([*runners, *(r for r in [other.runner] if r not in runners)]),
        )


@dataclass(frozen=True)
class Reading:
    """What the output says: the count, or why there is none (`UNKNOWN` or a runner's hint)."""

    count: TestCount | None
    why: str = ""


def _count(runner: str, passed: int, failed: int, skipped: int, ids: list[str]) -> TestCount:
    return TestCount(passed + failed, passed, failed, skipped, tuple(ids), runner)


_PYTEST_RE = re.compile(
    r"^=*\s*(?P<items>\d+ \w+(?: \w+)?(?:, \d+ \w+(?: \w+)?)*|no tests ran) in \d+(?:\.\d+)?s\b"
    r".*?=*$",
    re.MULTILINE,
)
_PYTEST_ITEM_RE = re.compile(r"(\d+) (\w+)")
_PYTEST_FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
_PYTEST_RAN = {"failed": 0, "error": 0, "errors": 0, "passed": 1, "xfailed": 1, "xpassed": 1}


def pytest(text: str) -> Iterator[TestCount]:
    """`=== 1 failed, 3 passed, 1 skipped, 1 xfailed, 1 error in 1.83s ===` (also `-q`)."""
    ids = _PYTEST_FAILED_RE.findall(text)
    for match in _PYTEST_RE.finditer(text):
        items = [(int(n), kind) for n, kind in _PYTEST_ITEM_RE.findall(match["items"])]
        passed = sum(n for n, kind in items if _PYTEST_RAN.get(kind) == 1)
        failed = sum(n for n, kind in items if _PYTEST_RAN.get(kind) == 0)
        skipped = sum(n for n, kind in items if kind in ("skipped", "deselected"))
        yield _count("pytest", passed, failed, skipped, ids)
        ids = []  # the failure lines belong to the first summary; a second run names its own


_UNITTEST_RE = re.compile(r"^Ran (\d+) tests? in [\d.]+s\n+(OK|FAILED)(?: \(([^)]*)\))?$", re.M)
_UNITTEST_FAILED_RE = re.compile(r"^(?:FAIL|ERROR): (\S+) \(([\w.]+)\)", re.MULTILINE)


def unittest(text: str) -> Iterator[TestCount]:
    """`Ran 5 tests in 0.007s` then `FAILED (failures=1, errors=1, skipped=1)` or `OK`."""
    ids = [
        cls if cls.endswith("." + name) else f"{cls}.{name}"
        for name, cls in _UNITTEST_FAILED_RE.findall(text)
    ]
    for match in _UNITTEST_RE.finditer(text):
        detail = dict(
            (key.strip(), int(n)) for key, n in re.findall(r"([\w ]+)=(\d+)", match[3] or "")
        )
        skipped = detail.get("skipped", 0)
        failed = sum(detail.get(k, 0) for k in ("failures", "errors", "unexpected successes"))
        yield _count("unittest", int(match[1]) - skipped - failed, failed, skipped, ids)
        ids = []


_CARGO_RE = re.compile(
    r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered"
)
_CARGO_TARGET_RE = re.compile(r"^\s*(?:Running (?:unittests )?(\S+)|Doc-tests (\S+))")
_CARGO_FAILED_RE = re.compile(r"^test (.+?) \.\.\. FAILED$")


def cargo(text: str) -> Iterator[TestCount]:
    """Every `test result: ok. 2 passed; 0 failed; 1 ignored; …` line: one per test binary.

    A failure is named `target::test` (`tests/more.rs::integration_fails`): the same test name
    can exist in two binaries."""
    target, ids = "", []
    for line in text.splitlines():
        if found := _CARGO_TARGET_RE.match(line):
            target = found[1] or f"doc {found[2]}"
        elif failed := _CARGO_FAILED_RE.match(line):
            ids.append(f"{target}::{failed[1]}" if target else failed[1])
        elif result := _CARGO_RE.match(line):
            passed, failed_n, ignored = int(result[1]), int(result[2]), int(result[3])
            yield _count("cargo test", passed, failed_n, ignored, ids)
            ids = []


_GO_RESULT_RE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", re.MULTILINE)


def go(text: str) -> Iterator[TestCount]:
    """`go test -v`'s `--- PASS: TestX` lines (subtests too); `-json` events are read as JSON.

    Without `-v` go names only failed tests and passing packages: no count (see `go_hint`)."""
    if '"Action":' in text:
        yield from _go_json(text)
        return
    if "=== RUN" not in text:
        return
    results = _GO_RESULT_RE.findall(text)
    if results:
        ids = [name for kind, name in results if kind == "FAIL"]
        passed = sum(kind == "PASS" for kind, _ in results)
        yield _count("go test", passed, len(ids), len(results) - passed - len(ids), ids)


def _go_json(text: str) -> Iterator[TestCount]:
    actions: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("Test") and event.get("Action") in _GO_ACTIONS:
            actions.append((event["Action"], f"{event.get('Package', '')}.{event['Test']}"))
    if actions:
        ids = [name for action, name in actions if action == "fail"]
        passed = sum(action == "pass" for action, _ in actions)
        yield _count("go test -json", passed, len(ids), len(actions) - passed - len(ids), ids)


_GO_ACTIONS = frozenset({"pass", "fail", "skip"})


_JEST_RE = re.compile(r"^Tests:\s+(.*\d+ total)\s*$", re.MULTILINE)
_JEST_FAILED_RE = re.compile(r"^\s*● (?!Test suite failed to run)(.+?)\s*$", re.MULTILINE)


def jest(text: str) -> Iterator[TestCount]:
    """`Tests:       1 failed, 1 skipped, 1 todo, 2 passed, 5 total`; failures are `● a › b`."""
    ids = list(dict.fromkeys(_JEST_FAILED_RE.findall(text)))
    for match in _JEST_RE.finditer(text):
        items = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (\w+)", match[1]))
        skipped = items.get("skipped", 0) + items.get("todo", 0) + items.get("pending", 0)
        yield _count("jest", items.get("passed", 0), items.get("failed", 0), skipped, ids)
        ids = []


_VITEST_RE = re.compile(r"^\s*Tests\s{2,}(.*?)\s*\((\d+)\)\s*$", re.MULTILINE)
_VITEST_FAILED_RE = re.compile(r"^\s*FAIL\s+(\S.*? > .+?)\s*$", re.MULTILINE)


def vitest(text: str) -> Iterator[TestCount]:
    """`      Tests  1 failed | 2 passed | 1 skipped | 1 todo (5)`; failures `FAIL  f > a > b`."""
    ids = list(dict.fromkeys(_VITEST_FAILED_RE.findall(text)))
    for match in _VITEST_RE.finditer(text):
        items = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (\w+)", match[1]))
        skipped = items.get("skipped", 0) + items.get("todo", 0)
        yield _count("vitest", items.get("passed", 0), items.get("failed", 0), skipped, ids)
        ids = []


_MOCHA_RE = re.compile(
    r"^\s*(\d+) passing \([^)]*\)\s*$(?:\n^\s*(\d+) pending\s*$)?(?:\n^\s*(\d+) failing\s*$)?",
    re.MULTILINE,
)
_MOCHA_FAILURE_RE = re.compile(r"^\s*\d+\) (.+?)\n((?:^\s+.+\n)*?)^\s+(.+):\s*$", re.MULTILINE)


def mocha(text: str) -> Iterator[TestCount]:
    """`2 passing (5ms)`, `2 pending`, `1 failing`; a failure's title spans lines up to `:`."""
    for match in _MOCHA_RE.finditer(text):
        rest = text[match.end() :]
        failing = int(match[3] or 0)
        ids: list[str] = []
        for failure in _MOCHA_FAILURE_RE.finditer(rest):
            if len(ids) == failing:
                break
            parts = [failure[1], *failure[2].split("\n"), failure[3]]
            ids.append(" ".join(p.strip() for p in parts if p.strip()))
        yield _count("mocha", int(match[1]), failing, int(match[2] or 0), ids)


_TAP_RE = re.compile(r"^(?:#|ℹ) (tests|pass|fail|cancelled|skipped|skip|todo) (\d+)\s*$", re.M)
_TAP_NOT_OK_RE = re.compile(r"^(\s*)not ok \d+ - (.+?)(?: # .*)?\n((?:\1\s+.*\n)*)", re.MULTILINE)
_SPEC_FAILED_RE = re.compile(r"^✖ (.+?) \([\d.]+m?s\)\s*$", re.MULTILINE)


def tap(text: str) -> Iterator[TestCount]:
    """TAP's trailer (`# pass 3`, `# fail 2`, `# skipped 1`, …), as `node --test` writes it;
    its spec reporter writes the same as `ℹ pass 3`."""
    blocks: list[dict[str, int]] = [{}]
    for kind, n in _TAP_RE.findall(text):
        if kind in blocks[-1]:
            blocks.append({})
        blocks[-1][kind] = int(n)
    ids = [name for _, name, yaml in _TAP_NOT_OK_RE.findall(text) if "type: 'suite'" not in yaml]
    if "✖ failing tests:" in text:
        ids += _SPEC_FAILED_RE.findall(text.split("✖ failing tests:", 1)[1])
    for block in blocks:
        if "pass" in block and "fail" in block:
            failed = block["fail"] + block.get("cancelled", 0)
            skipped = block.get("skipped", 0) + block.get("skip", 0) + block.get("todo", 0)
            yield _count("tap", block["pass"], failed, skipped, list(dict.fromkeys(ids)))
            ids = []


def junit(text: str) -> Iterator[TestCount]:
    """JUnit XML in the output (`node --test --test-reporter=junit`, mocha's xunit)."""
    cases = junit_cases(text)
    if cases is not None:
        yield from [from_junit(cases)]


def from_junit(cases: list[JunitCase]) -> TestCount:
    """The count of a JUnit report's test cases (a report file, or XML found in the output)."""
    failed = [c.id for c in cases if c.outcome == "failed"]
    skipped = sum(c.outcome == "skipped" for c in cases)
    return _count("junit", len(cases) - len(failed) - skipped, len(failed), skipped, failed)


_GTEST_RE = re.compile(
    r"^\[=+\] (\d+) tests? from \d+ test (?:suite|case)s? ran\..*(?P<rest>(?:\n(?!\[=+\]).*)*)",
    re.MULTILINE,
)
_GTEST_LIST_RE = re.compile(
    r"^\[\s+(FAILED|SKIPPED)\s+\] (\d+) tests?, listed below:", re.MULTILINE
)
_GTEST_NAMED_RE = re.compile(r"^\[  FAILED  \] ([\w/.]+)(?:, where .*)?$", re.MULTILINE)
_GTEST_DISABLED_RE = re.compile(r"^\s*YOU HAVE (\d+) DISABLED TESTS?", re.MULTILINE)


def gtest(text: str) -> Iterator[TestCount]:
    """`[==========] 4 tests from 1 test suite ran.`, then `[  FAILED  ] 1 test, listed below:`
    with the names, `[  SKIPPED ] …` and `YOU HAVE 1 DISABLED TEST`."""
    for match in _GTEST_RE.finditer(text):
        rest = match["rest"]
        listed = {kind: int(n) for kind, n in _GTEST_LIST_RE.findall(rest)}
        failed, skipped = listed.get("FAILED", 0), listed.get("SKIPPED", 0)
        ids = _GTEST_NAMED_RE.findall(rest)[:failed]
        disabled = sum(int(n) for n in _GTEST_DISABLED_RE.findall(rest))
        yield _count(
            "googletest", int(match[1]) - failed - skipped, failed, skipped + disabled, ids
        )


_CATCH_RE = re.compile(
    r"^(?:All tests passed \(\d+ assertions? in (\d+) test cases?\)"
    r"|test cases:\s+(\d+) \|(.*))$",
    re.MULTILINE,
)
_CATCH_FAILED_RE = re.compile(r"^-{60,}\n(.+)\n(?:.+\n)*?-{60,}\n.*\n\.{60,}", re.MULTILINE)


def catch2(text: str) -> Iterator[TestCount]:
    """`All tests passed (4 assertions in 3 test cases)` or `test cases: 3 | 2 passed | 1 failed`
    (`| 1 skipped` from Catch2 3.3); a failed case's name heads its block between dashes."""
    ids = list(dict.fromkeys(_CATCH_FAILED_RE.findall(text)))
    for match in _CATCH_RE.finditer(text):
        if match[1]:
            yield _count("catch2", int(match[1]), 0, 0, [])
            continue
        items = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (\w+)", match[3]))
        failed = items.get("failed", 0) + items.get("failed as expected", 0)
        yield _count("catch2", items.get("passed", 0), failed, items.get("skipped", 0), ids)
        ids = []


_UNITY_RE = re.compile(r"^(\d+) Tests (\d+) Failures (\d+) Ignored\s*$", re.MULTILINE)
_UNITY_FAILED_RE = re.compile(r"^[^:\n]+:\d+:(\w+):FAIL\b", re.MULTILINE)


def unity(text: str) -> Iterator[TestCount]:
    """Unity's (C) `3 Tests 1 Failures 1 Ignored`; a failure is `file.c:20:test_sub:FAIL: …`."""
    ids = _UNITY_FAILED_RE.findall(text)
    for match in _UNITY_RE.finditer(text):
        tests, failed, ignored = int(match[1]), int(match[2]), int(match[3])
        yield _count("unity", tests - failed - ignored, failed, ignored, ids)
        ids = []


_CTEST_RE = re.compile(
    r"^\s*\d+/\d+ Test\s+#(\d+): (\S+) \.*\s*(?:\*+)?([A-Za-z][\w ()]*?)\s+[\d.]+ sec",
    re.MULTILINE,
)


def ctest(text: str, inside: frozenset[str] = frozenset()) -> Iterator[TestCount]:
    """ctest's line per test executable (`1/3 Test #1: gtest_calc ....***Failed  0.00 sec`),
    but for the executables numbered in `inside`, whose own framework's count was read."""
    outcomes = [(name, status) for n, name, status in _CTEST_RE.findall(text) if n not in inside]
    skip = [status.startswith(("Not Run", "Skipped", "Disabled")) for _, status in outcomes]
    ids = [
        name
        for (name, status), s in zip(outcomes, skip, strict=True)
        if status != "Passed" and not s
    ]
    if outcomes:
        yield _count("ctest", len(outcomes) - len(ids) - sum(skip), len(ids), sum(skip), ids)


RUNNERS: dict[str, Callable[[str], Iterator[TestCount]]] = {
    "pytest": pytest, "unittest": unittest, "cargo": cargo, "go": go, "jest": jest,
    "vitest": vitest, "mocha": mocha, "node": tap, "tap": tap, "googletest": gtest,
    "catch2": catch2, "unity": unity, "ctest": ctest,
}  # fmt: skip
"""The runners `[commands] test_runner` may name (config/settings.py's `TestRunner`), each with
the one reader of its summary; "ctest" reads its executables and the frameworks inside them."""
READERS: tuple[Callable[[str], Iterator[TestCount]], ...] = (
    pytest,
    unittest,
    cargo,
    go,
    jest,
    vitest,
    mocha,
    tap,
    gtest,
    catch2,
    unity,
    junit,
)


def read_counts(output: str, runner: str | None = None) -> Reading:
    """Every runner's totals in `output`, summed, each task runner's package (and each ctest
    executable) read on its own; or no count and why. `runner` (the user's `test_runner`):
    only that runner's summary is read, nothing guessed from lines another runner could print."""
    text = plain(output)
    readers = READERS if runner in (None, "ctest") else (RUNNERS[runner],)
    found: list[TestCount] = []
    inside: set[str] = set()
    rest, unprefixed = text, list[TestCount]()
    for prefix, lines in by_prefix(text):
        counts = [count for reader in readers for count in reader(lines)]
        if not prefix:
            rest, unprefixed = lines, counts
        elif counts and prefix.isdigit():
            inside.add(prefix)  # a ctest executable whose framework counted its tests
        elif counts:
            counts = [replace(c, failed_ids=tuple(f"{prefix}: {i}" for i in c.failed_ids))
                      for c in counts]  # fmt: skip
        found += counts
    if runner in (None, "ctest") and (
        whole := list(ctest(rest, frozenset(inside)))
    ):  # ctest without -V: only failures show
        found = [c for c in found if c not in unprefixed] + whole  # output, so count executables
    if not found:
        named = f"no {runner} summary in the output; test_runner = {runner!r}" if runner else ""
        return Reading(None, go_hint(text) or named or UNKNOWN)
    total = found[0]
    for count in found[1:]:
        total += count
    return Reading(total)
