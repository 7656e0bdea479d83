"""What a run writes into its card: the new state, the reason, and a short record of the run.

A card keeps a `runs:` list of short pointers (DESIGN.md: id, started, result, reason, rounds,
tokens, cost, commit, log). The runner writes them as `RunRecord`s; reading one back is lenient,
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


class RunRecord(BaseModel):
    """One entry of a card's `runs:` list; every field may be missing in a hand-edited card."""

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
    """The evidence ledger, one line per criterion (`0: verified on abc… — run_tests …`)."""

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
        """The record as a `runs:` entry: keys in the order they are written, None left out."""
        values = self.model_dump()
        return {k: values[k] for k in RUN_KEYS if values.get(k) is not None}


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
    """A run to append to `runs:`."""

    def text_arguments(self) -> dict[str, Any]:
        """The keyword arguments of `update_card_text` for this change."""
        reason = None if self.reason is KEEP else (self.reason or False)
        run = self.run.entry() if self.run is not None else None
        return {"state": self.state, "reason": reason, "run": run}
