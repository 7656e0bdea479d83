"""Which lines of a command's output say why it failed, read by the runner's own formats.

`test exit 1` tells the user nothing; the line that does is somewhere in hundreds: the compiler's
`error[E0277]: …`, a test runner's failure (`FAILED t.py::x`, `--- FAIL: TestX`, `● a › b`,
`test x ... FAILED`), a missing program, or the sandbox's `Read-only file system` with its path.
Runners also print passing lines that look alarming to a word search — cargo's
`test result: ok. 0 failed`, a test named `handles errors ✓` — and timestamps that look like
`file:line` (vitest's `Start at 20:36:25`). `classify` tells them apart for the model's output
summaries; `decisive` picks the few lines the CLI, the editor and `cardrunner log` show.
"""

from __future__ import annotations

import re
from typing import Literal

from cardrunner.verify.runneroutput import plain

Kind = Literal["error", "warning"]

_SANDBOX_RE = re.compile(
    r"read-only file system|\bEROFS\b|os error 30|errno 30|permission denied|\bEACCES\b"
    r"|operation not permitted|\bEPERM\b",
    re.IGNORECASE,
)
_MISSING_RE = re.compile(
    r"command not found|no such file or directory|\bENOENT\b|not recognized as an internal"
    r"|cannot find module|modulenotfounderror|could not start",
    re.IGNORECASE,
)
_ERROR_RE = re.compile(r"error|failed|failure|traceback|exception|fatal|panic", re.IGNORECASE)
_WARNING_RE = re.compile(r"warning", re.IGNORECASE)
_ZERO_RE = re.compile(
    r"\b0 (?:failed|failing|failures?|errors?|warnings?)\b|\b(?:failures|errors)=0\b"
    r"|# fail 0\b|\bfail 0\b|\b0 (?:tests? )?failed\b",
    re.IGNORECASE,
)
_PASSING_RE = re.compile(
    r"^\s*(?:test result: ok\.|test .+ \.\.\. (?:ok|ignored)$|--- (?:PASS|SKIP):|ok\s+\S+\s|"
    r"PASS\s|ok \d+ - |[✓✔√]|\S+ PASSED\b|.+ \.\.\. ok$)"
)
_TIME_RE = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")
_LOCATION_RE = re.compile(
    r"^\s*(?:-->\s*)?(?=[^\s:]*[A-Za-z_./\\])[^\s:][^\s:]*:\d+(?::\d+)?(?::|\s+-\s)"
)
_NOISE_RE = re.compile(
    r"^\s*(?:at |\d+: |[│|] |[=_⎯-]{3,}(?! (?:FAIL|PASS|SKIP):))|^\s*\^+\s*$|^failures:$"
    r"|^(?:failureType|code|name|operator|type|stack): |^\w+: \|-$"
)
_MARK_RE = re.compile(
    r"^\s*(?:--- FAIL:|FAIL\s|FAILED\s|ERROR\s|ERROR:|FAIL:|●|✖|×|not ok \d+|\d+\) \S|E\s+\S"
    r"|test .+ \.\.\. FAILED$|error(?:\[\w+\])?: |\S*Error\b|thread '.*' .*panicked at"
    r"|assertion .* failed|\*\*\* Error)"
)
_MESSAGE_AT_RE = re.compile(r"^\S+:\d+(?::\d+)?:\s+\S")
"""`calc_test.go:13: Add(1, 1) = 2, want 3`: a location with what went wrong there."""
_RERUN_RE = re.compile(r"^(?:error: test failed, to rerun|error: \d+ targets? failed)")
_MAX_DECISIVE = 8
_MAX_CHARS = 240


def classify(line: str) -> Kind | None:
    """`error` or `warning` when the line reports a problem in the runner's terms, else None."""
    text = plain(line)
    if _PASSING_RE.match(text):
        return None
    rest = _ZERO_RE.sub("", text)
    if _SANDBOX_RE.search(rest) or _ERROR_RE.search(rest) or _MARK_RE.match(text):
        return "error"
    if _WARNING_RE.search(rest):
        return "warning"
    if _LOCATION_RE.match(text) and not _TIME_RE.search(text.split(" ", 1)[0] + " "):
        return "error"
    return None


def decisive(output: str, spawn_error: str | None = None, limit: int = _MAX_DECISIVE) -> list[str]:
    """The lines that say why a command failed: a program that could not start, the sandbox's
    refusal and the runner's own failure lines (`FAILED x`, `--- FAIL:`, `error[E…]:`); other
    error-looking lines (source excerpts, locals) only when there are none of those."""
    if spawn_error:
        return [spawn_error.strip()[:_MAX_CHARS]]
    lines = [line.strip() for line in plain(output).splitlines() if line.strip()]
    first = [ln for ln in lines if _SANDBOX_RE.search(ln) or _MISSING_RE.search(ln)]
    errors = [
        ln
        for ln in lines
        if classify(ln) == "error" and not _NOISE_RE.match(ln) and not _RERUN_RE.match(ln)
    ]
    marked = [ln for ln in errors if _MARK_RE.match(ln) or _MESSAGE_AT_RE.match(ln)]
    rest = [] if marked or first else errors  # the runner named its failures: that is why
    chosen = list(dict.fromkeys(ln[:_MAX_CHARS] for ln in [*first, *marked, *rest]))
    return chosen[:limit]
