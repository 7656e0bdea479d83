"""RunRecord and CardUpdate: the typed write-back, and a lenient reading of the user's file."""

from __future__ import annotations

from dataclasses import replace
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
    assert back == replace(
        record, evidence=["0: verified on abc — run_tests", "1: verified on two lines"]
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


LEDGER = ['1. verified on abc1234567 — run_tests t1: "2 passed"', "2. verified on abc1234567"]


def test_the_cards_record_stays_short_and_the_ledger_goes_to_the_trailers() -> None:
    record = RunRecord(
        id="r2", started="2026-12-01T10:15:00Z", result="done", rounds=7, tokens=9_000,
        cost_usd=0.31, commit="abc1234567", log=".cardrunner/runs/r2.jsonl", outcome="committed",
        evidence=LEDGER,
    )  # fmt: skip
    text = update_card_text(CARD, **CardUpdate(state="Done", run=record).text_arguments())
    front = text.split("---\n")[1]
    assert "evidence" not in front and "verified on" not in front
    record_lines = front[front.index("last_run:") :].splitlines()
    assert len(record_lines) == 1, record_lines  # the card's own text right below it
    assert record_lines[0].startswith("last_run: {id: r2, started: ")
    card, _ = parse_card(text, Path("c.md"))
    assert card is not None and card.last_run == replace(record, evidence=None)
    assert ("Evidence", LEDGER[0]) in record_trailers(record), "the ledger stays in the commit"


def test_an_old_card_with_the_ledger_in_its_record_still_reads_and_is_shortened() -> None:
    old = CARD.replace(
        "---\nText",
        "last_run:\n  id: r1\n  result: done\n  cost_usd: 0.2\n  evidence:\n"
        "    - '0: verified on abc — run_tests t1: \"2 passed\"'\n"
        "    - '1: verified on abc — ui_read t2: \"Total: 81.00\"'\n---\nText",
    )
    card, problems = parse_card(old, Path("c.md"))
    assert card is not None and not problems and card.last_run is not None
    assert card.last_run.evidence is not None and len(card.last_run.evidence) == 2
    again = update_card_text(
        old, **CardUpdate(run=RunRecord(id="r3", result="done")).text_arguments()
    )
    assert "evidence" not in again and "last_run: {id: r3, result: done}\n---" in again


def test_a_recorded_estimate_is_shown_as_one() -> None:
    """The hover and `cardrunner log CARD` read the card's record: `cost_basis: estimate` (a
    replay, or usage the endpoint did not report) shows the cost as every view shows one."""
    assert RunRecord(cost_usd=0.07, cost_basis="estimate").cost(4) == "~$0.0700 (estimate)"
    assert RunRecord(cost_usd=0.07, cost_basis="priced 0").cost() == "$0.07"
    assert RunRecord(cost_usd=0.07).cost() == "$0.07" and RunRecord().cost() is None
