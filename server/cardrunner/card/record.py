"""What a run writes into its card: the new state, the reason, and a short record of the run.

A card keeps one short pointer to its last run, `last_run:` (DESIGN.md: id, started, result,
reason, rounds, tokens, cost, commit, log); every committed run's record also goes into its card
commit as trailers, which makes `git log` the card's history (`run/cardstore.py`), so the card
does not grow with its runs. The runner writes them as `RunRecord`s; reading one back is lenient,
because the card is the user's file: a value someone edited into a shape that does not fit is
read as missing rather than failing the card. `CardUpdate` says in one value what a write-back
changes, including the three things that can happen to `reason` (set, removed, left alone).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any, Literal

from cardrunner.card.text import RUN_KEYS

FailureReason = Literal[
    "model_failed",
    "max_rounds",
    "max_tokens",
    "max_cost",
    "max_wall",
    "tool_errors",
    "stalled",
    "unverified",
    "tests_failed",
    "rejected",
    "cancelled",
    "api_error",
    "truncated",
    "refusal",
    "no_result_line",
    "config_error",
    "interrupted",
]
"""The fixed list of reasons a run can fail for (DESIGN.md); stored on the card."""

RESUMABLE_REASONS: frozenset[str] = frozenset(
    {"max_rounds", "max_tokens", "max_cost", "max_wall", "interrupted", "cancelled", "api_error"}
)
"""Reasons after which continuing the same conversation makes sense."""

LEDGER = frozenset({"evidence"})
"""What a run record carries into the card commit's trailers but not into the card."""

# YAML, trailers and the wire's JSON give str, int, float, bool, bytes, lists and dates only.
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0*)?")
"""An integer as text, as pydantic's lax mode read it before: `3`, ` +3 `, `1_000`, `3.0`."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A card's `last_run:` (or a legacy `runs:` entry); any field may be missing if hand-edited.

    A plain dataclass, not a pydantic model: every card carries one, and the idle language
    server must not pay pydantic's ~11 MiB for reading cards (bench/RESULTS.md, idle memory);
    `read` is the lenient reader that pydantic's lax mode was."""

    id: str | None = None
    started: str | None = None
    """UTC, ISO 8601 to the second, with a `Z`."""
    result: str | None = None
    """`done` or `failed`."""
    reason: str | None = None
    rounds: int | None = None
    tokens: int | None = None
    """Every token of the run, cached or not (`Usage.total`)."""
    cost_usd: float | None = None
    cost_basis: str | None = None
    """How `cost_usd` was made when it is not the endpoint's measured usage at a real price:
    `estimate` (cardrunner's count of what it sent) or `priced 0` (`[prices.NAME]` of zeros)."""
    commit: str | None = None
    branch: str | None = None
    """Set when `commit` is not on the user's branch: the branch that holds it."""
    log: str | None = None
    """The run log's path relative to the workspace."""
    outcome: str | None = None
    """How a run that held ended: committed, not_committed or nothing_to_change."""
    evidence: list[str] | None = None
    """Trailers only (never written into the card: `entry`), read back from older cards.
    The evidence ledger, one line per criterion, numbered for people from 1 (`1. verified on
    abc… — run_tests …`; records written before say `0: …`)."""

    def cost(self, digits: int = 2) -> str | None:
        """The recorded cost as every view writes it (`usd`); None when there is none."""
        if self.cost_usd is None:
            return None
        return usd(self.cost_usd, digits, estimate=self.cost_basis == "estimate")

    @classmethod
    def started_at(cls, when: datetime) -> str:
        """How `started` is written: `2026-11-29T10:15:00Z`."""
        return when.isoformat(timespec="seconds").replace("+00:00", "Z")

    @classmethod
    def read(cls, raw: Mapping[Any, Any]) -> RunRecord:
        """The record as written (a card's mapping, trailers, the wire's JSON); a value of the
        wrong shape reads as missing, and other keys are ignored."""
        values: dict[str, Any] = {}
        for key, value in raw.items():
            reader = _READERS.get(str(key))
            if reader is not None and value is not None:
                read = reader(value)
                if read is not None:
                    values[str(key)] = read
        return cls(**values)

    def values(self) -> dict[str, Any]:
        """Every field by name, None included (the wire's JSON, the trailers)."""
        return asdict(self)

    def entry(self) -> dict[str, Any]:
        """The record as the card holds it: keys in the order they are written, None left out.

        Short scalars only — the outcome, the commit, the cost, the log's path — so the card's
        own text is not pushed down by the run: the evidence ledger (a line per criterion) is in
        the card commit's `Evidence:` trailers and the run log. A card written before, with the
        ledger in `last_run:`, still reads (`read`), and its next run replaces the record."""
        values = self.values()
        keys = [*RUN_KEYS, *(k for k in values if k not in RUN_KEYS)]
        return {k: values[k] for k in keys if k not in LEDGER and values.get(k) is not None}


def _text(value: object) -> str | None:
    """A string; bytes that are UTF-8 count (YAML's `!!binary`), numbers do not."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return str(value) if isinstance(value, str) else None


def _number(value: object) -> float | None:
    """A finite or infinite float from a number or its ASCII text (`1e3`, `.5`, `inf`)."""
    if isinstance(value, bool | int | float):
        return float(value)
    text = _text(value)
    if text is None or not text.isascii():
        return None
    try:
        return float(text.strip())
    except ValueError:
        return None


def _integer(value: object) -> int | None:
    """An integer, an integral float, or an integer's text (`3`, `3.0`, `1_000`); not `3.5`."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        whole = math.isfinite(value) and value == int(value) and -(2**63) <= value < 2**63
        return int(value) if whole else None  # pydantic's range for a float made an int
    text = _text(value)
    if text is None or not _INT_TEXT.fullmatch(text.strip()):
        return None
    return int(text.strip().split(".")[0])


def _lines(value: object) -> list[str] | None:
    """A list of strings; one item of another shape drops the whole list."""
    if not isinstance(value, list | tuple):
        return None
    items = [_text(item) for item in value]
    return None if any(item is None for item in items) else [i for i in items if i is not None]


def usd(cost: float, digits: int = 2, *, estimate: bool = False, short: bool = False) -> str:
    """A cost as every view writes it: `$0.12`. An estimate — a replayed run, whose answers
    nobody was billed, or usage the endpoint did not report — is `~$0.12 (estimate)`, and
    `~$0.12 est.` where a line is short (a lens, a progress line, a row); one notation for the
    terminal, `cardrunner log`, the editor, the board, the card and the pull request."""
    money = f"${cost:.{digits}f}"
    if not estimate:
        return money
    return f"~{money} est." if short else f"~{money} (estimate)"


_BY_TYPE: dict[str, Callable[[object], object]] = {
    "str | None": _text, "int | None": _integer, "float | None": _number,
    "list[str] | None": _lines,
}  # fmt: skip
_READERS = {f.name: _BY_TYPE[str(f.type)] for f in fields(RunRecord)}
"""Each field's lenient reader, by its annotation (a new field of a new type fails here)."""


class Keep(enum.Enum):
    """Leave a value of the card as it is."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True)
class CardUpdate:
    """One write-back to a card. Only what is named here changes; every other byte stays."""

    state: str | None = None
    """The new state (one of CARD_STATES); None leaves it."""
    reason: str | Keep | None = KEEP
    """A failure reason to set, None to remove the card's reason, KEEP to leave it."""
    run: RunRecord | None = None
    """A run to record as the card's `last_run:` (replacing the one before)."""

    def text_arguments(self) -> dict[str, Any]:
        """The keyword arguments of `update_card_text` for this change."""
        reason = None if self.reason is KEEP else (self.reason or False)
        run = self.run.entry() if self.run is not None else None
        evidence = self.run.evidence if self.run is not None else None
        return {"state": self.state, "reason": reason, "run": run, "evidence": evidence}


TRAILERS = (
    ("id", "Run"),
    ("started", "Started"),
    ("result", "Result"),
    ("reason", "Reason"),
    ("rounds", "Rounds"),
    ("tokens", "Tokens"),
    ("cost_usd", "Cost-USD"),
    ("cost_basis", "Cost-Basis"),
    ("commit", "Commit"),
    ("branch", "Branch"),
    ("log", "Log"),
    ("outcome", "Outcome"),
    ("evidence", "Evidence"),
)
"""Record field → the git trailer that carries it in the run's card commit. `Run:` is the
trailer the run's own commits already have; `Evidence:` repeats, one per criterion."""


def record_trailers(record: RunRecord) -> list[tuple[str, str]]:
    """The record as `Key: value` trailers in field order, None left out; one line each, so
    `git interpret-trailers` and `%(trailers)` read them back (`record_from_trailers`)."""
    values = record.values()
    found: list[tuple[str, str]] = []
    for name, key in TRAILERS:
        value = values[name]
        items = value if isinstance(value, list) else [] if value is None else [value]
        found += [(key, " ".join(str(item).split())) for item in items]
    return found


def record_from_trailers(trailers: list[tuple[str, str]]) -> RunRecord:
    """The record that `record_trailers` wrote, leniently (a bad value reads as missing); other
    trailers are ignored, the last of a repeated single-valued one counts."""
    fields: dict[str, Any] = {}
    by_key = {key.lower(): name for name, key in TRAILERS}
    for key, value in trailers:
        name = by_key.get(key.strip().lower())
        if name == "evidence":
            fields.setdefault(name, []).append(value.strip())
        elif name is not None:
            fields[name] = value.strip()
    return RunRecord.read(fields)


_CLOSING = re.compile(
    r"\b(?P<word>close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?P<colon>:?)(?P<space>\s*)"
    r"(?P<ref>(?:(?P<repo>[\w.-]+/[\w.-]+)#|#|GH-)(?P<n>\d+)"
    r"|https?://[^/\s]+/(?P<urlrepo>[^/\s]+/[^/\s]+)/(?:issues|pull)/(?P<urln>\d+))",
    re.IGNORECASE,
)
NEUTRALISED_NOTE = (
    "(cardrunner rewrote {n} closing keyword(s) in this text so that merging closes nothing: "
    "only cardrunner names the issue a card's pull request fixes.)"
)


def unclosing(text: str, note: bool = True) -> str:
    """`text` with GitHub's closing keywords made inert and visibly so: `Fixes #1` becomes
    `Fixes issue 1`, `closes o/r#2` and `closes https://github.com/o/r/issues/2` become
    `closes o/r issue 2` — what a model or an issue wrote can never close an issue when its
    commit is merged. GitHub closes on close/closes/closed, fix/fixes/fixed and
    resolve/resolves/resolved, any case, with or without a colon, before `#N`, `GH-N`,
    `owner/repo#N` or an issue's URL; a word in between breaks the link. With `note`, a line
    saying how many were rewritten ends the text."""
    count = 0

    def rewrite(found: re.Match[str]) -> str:
        nonlocal count
        count += 1
        repo = found.group("repo") or found.group("urlrepo")
        number = found.group("n") or found.group("urln")
        where = f"{repo} issue {number}" if repo else f"issue {number}"
        return f"{found.group('word')}{found.group('colon')} {where}"

    done = _CLOSING.sub(rewrite, text)
    if not count or not note:
        return done
    return f"{done.rstrip()}\n\n{NEUTRALISED_NOTE.format(n=count)}"
