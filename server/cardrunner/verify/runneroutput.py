"""What surrounds a test runner's own summary: task runners' line prefixes, JUnit reports, and the
switches that make a runner print a count at all.

A monorepo's task runner prefixes every line of a package's output with the package (turbo
`@acme/ui:test: `, pnpm -r `packages/ui test: `, lerna and nx `--output-style=stream` `@acme/ui: `),
and ctest `-V` prefixes each test executable's output with its number (`3: `). Runs in parallel
interleave those lines, so the readers would see two half-summaries or none: `by_prefix` gives
each prefix's lines back as their own text. A prefix is taken only with the anchor that runner
prints (pnpm's `pkg test$ cmd` header, npm's `> pkg@1.0.0 test` banner, ctest's
`3: Test command:`) or, for turbo's `name:task: `, on three lines or more: a traceback's
`calc.c:12: FAILED:` must stay where the reader looks for it.

`go test` without `-v` names packages, not tests, and `ctest` without `-V` names executables,
not the GoogleTest, Catch2 or Unity tests inside them: a deleted test would not change either.
When cardrunner runs such a command itself (argv starts with `go test` or `ctest`) it adds the
switch (`counting_argv`); `-v` rather than `-json` because the model reads the same output and
go's `-v` text is what people read. Behind a script (`make test`) nothing is added, and the run
says the tests were not counted.

JUnit XML is the one report format nearly every runner can write: pytest (`--junitxml`), jest
(jest-junit), vitest (`--reporter=junit`), mocha (`--reporter xunit`),
`node --test --test-reporter=junit`, cargo-nextest, go-junit-report and ctest (`--output-junit`,
whole executables only) write it, to a file or to the output. Only `<testcase>` elements are
read, with what they contain (`<failure>`, `<error>`, `<skipped>`): the suites' own
`tests=`/`failures=` attributes differ between writers. The XML comes from the project's tests,
so it is parsed without resolving entities beyond the document and read only up to a size limit.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_CHARS = 20_000_000
_ANSI_RE = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]"
)
_DOCUMENT_RE = re.compile(r"<testsuites?[\s>].*</testsuites?>", re.DOTALL)
Outcome = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class JunitCase:
    """One `<testcase>`: its id (`classname::name`, or the name when that already says it)."""

    id: str
    outcome: Outcome


def junit_cases(text: str) -> list[JunitCase] | None:
    """The test cases of the JUnit document in `text`; None when there is none (or it is not
    well-formed XML)."""
    found = _DOCUMENT_RE.search(text[:MAX_CHARS])
    if found is None:
        return None
    try:
        root = ET.fromstring(found[0])
    except ET.ParseError:
        return None
    return [_case(element) for element in root.iter("testcase")]


def read_report(path: Path) -> list[JunitCase] | None:
    """The test cases of a report file the test command wrote; None when it is missing or
    unreadable."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return junit_cases(handle.read(MAX_CHARS))
    except OSError:
        return None


def _case(element: ET.Element) -> JunitCase:
    name = element.get("name", "")
    cls = element.get("classname", "")
    same = not cls or cls in name or name in cls
    tags = {child.tag for child in element}
    outcome: Outcome = (
        "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
    )
    return JunitCase(name if same else f"{cls}::{name}", outcome)


_TURBO_RE = re.compile(r"^((?:@[\w.-]+/)?[A-Za-z][\w.-]*:[A-Za-z][\w-]*(?::[\w-]+)*):(?: |$)")
_PNPM_RE = re.compile(r"^([\w@.][\w@./-]* [\w:.-]+): ")
_PACKAGE_RE = re.compile(r"^(@?[\w.-]+(?:/[\w.-]+)?): ")
_CTEST_RE = re.compile(r"^(\d+): ")
_PATTERNS = (_CTEST_RE, _TURBO_RE, _PNPM_RE, _PACKAGE_RE)


_ANCHOR_RE = re.compile(
    r"^(?:(\d+): Test command: |([\w@.][\w@./-]* [\w:.-]+)\$ |(@?[\w.-]+(?:/[\w.-]+)?): > \S+@\S+ \S"
    r"|> (?:nx run )?(@?[\w.-]+(?:/[\w.-]+)?):[\w-])",
    re.MULTILINE,
)


def plain(output: str) -> str:
    """The output without colour codes, with a carriage return read as a new line."""
    return _ANSI_RE.sub("", output).replace("\r\n", "\n").replace("\r", "\n")


def by_prefix(text: str) -> list[tuple[str, str]]:
    """(prefix, its lines without it) for each task runner's or ctest's prefix, after ("", the
    lines no prefix claims)."""
    lines = text.split("\n")
    tagged = [_candidate(line) for line in lines]
    seen = Counter(prefix for prefix, _ in tagged if prefix)
    anchors = {name for found in _ANCHOR_RE.findall(text) for name in found if name}
    taken = {p for p in seen if p in anchors or (_TURBO_RE.match(p + ": ") and seen[p] >= 3)}
    groups: dict[str, list[str]] = {"": []}
    for (prefix, rest), line in zip(tagged, lines, strict=True):
        if prefix in taken:
            groups.setdefault(prefix, []).append(rest)
        else:
            groups[""].append(line)
    return [(prefix, "\n".join(body)) for prefix, body in groups.items()]


def _candidate(line: str) -> tuple[str, str]:
    for pattern in _PATTERNS:
        if found := pattern.match(line):
            return found[1], line[found.end() :]
    return "", line


_GO_PACKAGE_RE = re.compile(r"^(?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))", re.MULTILINE)


def go_hint(text: str) -> str | None:
    """Why go's output has no count: it was run without `-v`."""
    if _GO_PACKAGE_RE.search(text) and "=== RUN" not in text and '"Action":' not in text:
        return "go test without -v names packages, not tests: add -v (or -json) to count them"
    return None


_GO_COUNTING = frozenset({"-v", "-json", "-v=true", "-test.v", "-test.v=true"})
_CTEST_COUNTING = frozenset({"-V", "-VV", "--verbose", "--extra-verbose"})


def counting_argv(argv: list[str]) -> list[str]:
    """`argv` with the switch that makes `go test` or `ctest` name each test, when cardrunner
    runs that runner itself and the switch is not there already."""
    program = Path(argv[0]).name if argv else ""
    if program == "go" and argv[1:2] == ["test"] and not _GO_COUNTING & set(argv):
        return [*argv[:2], "-v", *argv[2:]]
    if program == "ctest" and not _CTEST_COUNTING & set(argv):
        return [argv[0], "-V", *argv[1:]]
    return argv
