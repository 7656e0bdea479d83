"""RunRecord and CardUpdate: the typed write-back, and a lenient reading of the user's file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.card.card import parse_card
from cardrunner.card.record import (
    KEEP,
    CardUpdate,
    RunRecord,
    record_from_trailers,
    record_trailers,
)
from cardrunner.card.writeback import update_card_text

CARD = "---\ntitle: t\nstate: Failed\nreason: max_rounds\n---\nText.\n\n**Acceptance criteria**\n\n- ok\n"


def test_a_record_round_trips_through_the_card() -> None:
    record = RunRecord(
        id="r1", started="2026-11-29T10:15:00Z", result="failed", reason="max_cost",
        rounds=3, tokens=12_345, cost_usd=0.25, commit=None, log=".cardrunner/runs/r1.jsonl",
    )  # fmt: skip
    text = update_card_text(CARD, **CardUpdate(state="Failed", run=record).text_arguments())
    card, problems = parse_card(text, Path("c.md"))
    assert card is not None and not problems
    assert card.last_run == record and card.runs == []
    assert card.last_entry is not None and "commit" not in card.last_entry  # None is left out


@pytest.mark.parametrize(
    "record",
    [
        "runs:\n- id: a\n  rounds: many\n  note: mine\n",
        "last_run:\n  id: a\n  rounds: many\n  note: mine\n",
        "last_run: {id: a, rounds: many, note: mine}\n",
    ],
)
def test_values_of_the_wrong_shape_read_as_missing_and_other_keys_are_kept(record: str) -> None:
    card, _ = parse_card(CARD.replace("---\nText", record + "---\nText"), Path("c.md"))
    assert card is not None
    assert card.last_run == RunRecord(id="a")
    assert card.last_entry == {"id": "a", "rounds": "many", "note": "mine"}


def test_a_record_round_trips_through_trailers() -> None:
    record = RunRecord(
        id="r1", started="2026-11-29T10:15:00Z", result="done", rounds=3, tokens=12_345,
        cost_usd=0.2512, commit="abc123", branch="cards/x", log=".cardrunner/runs/r1.jsonl",
        outcome="committed", evidence=["0: verified on abc — run_tests", "1: verified\non two lines"],
    )  # fmt: skip
    trailers = record_trailers(record)
    assert ("Cost-USD", "0.2512") in trailers and ("Run", "r1") in trailers
    assert all("\n" not in value for _, value in trailers)
    back = record_from_trailers([("Card", "x"), ("Signed-off-by", "me"), *trailers])
    assert back == record.model_copy(
        update={"evidence": ["0: verified on abc — run_tests", "1: verified on two lines"]}
    )
    assert record_from_trailers([("Run", "r"), ("Rounds", "many")]) == RunRecord(id="r")


def test_the_reason_is_set_removed_or_kept_as_the_update_says() -> None:
    def reason(change: CardUpdate) -> str | None:
        card, _ = parse_card(update_card_text(CARD, **change.text_arguments()), Path("c.md"))
        assert card is not None
        return card.reason

    assert reason(CardUpdate(state="In Work", reason=None)) is None
    assert reason(CardUpdate(state="Failed", reason="cancelled")) == "cancelled"
    assert reason(CardUpdate(state="Review", reason=KEEP)) == "max_rounds"
    assert reason(CardUpdate(state="Review")) == "max_rounds"
