"""JUnit XML test reports: the one format nearly every runner can write.

pytest (`--junitxml`), jest (jest-junit), vitest (`--reporter=junit`), mocha (`--reporter xunit`),
`node --test --test-reporter=junit`, cargo-nextest and go-junit-report all write it, to a file or
to the output. Only `<testcase>` elements are read, with what they contain (`<failure>`,
`<error>`, `<skipped>`): the suites' own `tests=`/`failures=` attributes differ between writers
(mocha counts a failure as an error, node nests suites). The XML comes from the project's tests,
so it is parsed without resolving entities beyond the document and read only up to a size limit.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

_MAX_CHARS = 20_000_000
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
    found = _DOCUMENT_RE.search(text[:_MAX_CHARS])
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
            return junit_cases(handle.read(_MAX_CHARS))
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
