"""`RunRecord.read` reads a card's `last_run:` as pydantic's lax mode did before it: the
reference below is that model, kept here only, so the plain reader cannot drift from it."""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import fields
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from cardrunner.card.record import RunRecord


class Reference(BaseModel):
    """The `RunRecord` model as it was, with pydantic's lax reading."""

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    started: str | None = None
    result: str | None = None
    reason: str | None = None
    rounds: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    cost_basis: str | None = None
    commit: str | None = None
    branch: str | None = None
    log: str | None = None
    outcome: str | None = None
    evidence: list[str] | None = None


def reference(raw: dict[str, Any]) -> dict[str, Any]:
    """What the pydantic model read of `raw`: each field alone, a bad value as missing."""
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name in Reference.model_fields:
            with contextlib.suppress(ValidationError):
                out[name] = getattr(Reference.model_validate({name: value}), name)
    return out


NUMBER_TEXT = st.text(alphabet="0123456789+-._eE infatyINFATY", max_size=8)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), NUMBER_TEXT, st.text(max_size=6),
    st.binary(max_size=4), st.dates(), st.datetimes(), st.builds(str, st.integers()),
)  # fmt: skip
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.just({"a": 1}))
NAMES = st.sampled_from([f.name for f in fields(RunRecord)] + ["note", "runs"])


def same(a: object, b: object) -> bool:
    """Equal, with NaN equal to itself and an int never equal to a float."""
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return type(a) is type(b) and a == b


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(NAMES, VALUES, max_size=3))
def test_the_reader_reads_what_the_pydantic_model_read(raw: dict[str, Any]) -> None:
    read = RunRecord.read(raw).values()
    expected = {f.name: None for f in fields(RunRecord)} | reference(raw)
    for name, value in expected.items():
        assert same(read[name], value) or (value is None and read[name] is None), (name, raw)


def test_the_readers_edges_as_pydantic_read_them() -> None:
    raw = {"rounds": " 3.0 ", "tokens": "1_000", "cost_usd": "1e3", "id": 7, "commit": b"ab"}
    assert RunRecord.read(raw) == RunRecord(rounds=3, tokens=1000, cost_usd=1000.0, commit="ab")
    assert RunRecord.read({"rounds": 3.5, "started": datetime.date(2026, 1, 1)}) == RunRecord()
    assert RunRecord.read({"evidence": ["a", 1]}) == RunRecord()
