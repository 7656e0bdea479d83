"""What a run writes into its card: the new state, the reason, and a short record of the run.

A card keeps one short pointer to its last run, `last_run:` (DESIGN.md: id, started, result,
reason, rounds, tokens, cost, commit, log); every committed run's record also goes into its card
commit as trailers, which makes `git log` the card's history (`run/cardcommit.py`), so the card
does not grow with its runs. The runner writes them as `RunRecord`s; reading one back is lenient,
because the card is the user's file: a value someone edited into a shape that does not fit is
read as missing rather than failing the card. `CardUpdate` says in one value what a write-back
changes, including the three things that can happen to `reason` (set, removed, left alone).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from cardrunner.card.text import RUN_KEYS

LEDGER = frozenset({"evidence"})
"""What a run record carries into the card commit's trailers but not into the card."""


class RunRecord(BaseModel):
    """A card's `last_run:` (or a legacy `runs:` entry); any field may be missing if hand-edited."""

    model_config = ConfigDict(frozen=True)

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
    commit: str | None = None
    branch: str | None = None
    """Set when `commit` is not on the user's branch: the branch that holds it."""
    log: str | None = None
    """The run log's path relative to the workspace."""
    outcome: str | None = None
    """How a run that held ended: committed, not_committed or nothing_to_change."""
    evidence: list[str] | None = None
    """Trailers only (never written into the card: `entry`), read back from older cards."""
    """The evidence ledger, one line per criterion, numbered for people from 1 (`1. verified on
    abc… — run_tests …`; records written before say `0: …`)."""

    @classmethod
    def started_at(cls, when: datetime) -> str:
        """How `started` is written: `2026-11-29T10:15:00Z`."""
        return when.isoformat(timespec="seconds").replace("+00:00", "Z")

    @classmethod
    def read(cls, raw: Mapping[Any, Any]) -> RunRecord:
        """The record as written; a value of the wrong shape reads as missing."""
        fields = {str(k): v for k, v in raw.items() if str(k) in cls.model_fields}
        while fields:
            try:
                return cls.model_validate(fields)
            except ValidationError as exc:
                for error in exc.errors():
                    fields.pop(str(error["loc"][0]) if error["loc"] else "", None)
        return cls()

    def entry(self) -> dict[str, Any]:
        """The record as the card holds it: keys in the order they are written, None left out.

        Short scalars only — the outcome, the commit, the cost, the log's path — so the card's
        own text is not pushed down by the run: the evidence ledger (a line per criterion) is in
        the card commit's `Evidence:` trailers and the run log. A card written before, with the
        ledger in `last_run:`, still reads (`read`), and its next run replaces the record."""
        values = self.model_dump()
        return {k: values[k] for k in RUN_KEYS if k not in LEDGER and values.get(k) is not None}


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
    values = record.model_dump()
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
