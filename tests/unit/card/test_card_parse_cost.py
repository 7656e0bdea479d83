"""A card's parse costs the same however many runs it has had, and nothing when asked again.

Counted, not timed: the YAML events of the front matter after 1 and after 200 real write-backs,
and the parses the caches let through (`bench/card_parse.py` times the same thing).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import yaml

from cardrunner.card import parse as parse_module
from cardrunner.card import text as text_module
from cardrunner.card.card import load_card, parse_card, write_card
from cardrunner.card.record import CardUpdate, RunRecord
from cardrunner.card.text import TextCache, find_front_matter

CARD = (
    "---\ntitle: {title}\nstate: New   # column\ncategory: Bug\n---\n"
    "Adding two numbers subtracts them.\n\n**Acceptance criteria**\n\n- add(2, 3) is 5\n"
)


def record(number: int) -> RunRecord:
    """A run record whose values have the same width for every run number."""
    return RunRecord(
        id=f"20261201-{number:06d}-fix-add",
        started=f"2026-12-01T{number % 24:02d}:00:00Z",
        result="done" if number % 2 else "failed",
        reason=None if number % 2 else "max_rounds",
        rounds=10 + number % 50,
        tokens=100_000 + number,
        cost_usd=0.25,
        commit=f"c{number:039x}",
        log=f".cardrunner/runs/20261201-{number:06d}-fix-add.jsonl",
    )  # the ledger goes to the card commit's trailers, not into the card


def front_matter(text: str) -> str:
    front = find_front_matter(text)
    assert not isinstance(front, str)
    return front.yaml_text(text)


def test_the_front_matter_is_the_same_work_after_1_and_after_200_runs(tmp_path: Path) -> None:
    path = tmp_path / "fix-add.md"
    path.write_text(CARD.format(title="Adding two numbers subtracts them"))
    after: dict[int, str] = {}
    for number in range(1, 201):
        state = "Done" if number % 2 else "Failed"
        reason = None if number % 2 else "max_rounds"
        write_card(path, CardUpdate(state="In Work", reason=None))
        card = write_card(path, CardUpdate(state=state, reason=reason, run=record(number)))
        assert card.last_run == record(number)
        after[number] = path.read_text()
    one, many = front_matter(after[1]), front_matter(after[199])
    assert len(one) == len(many)
    assert len(list(yaml.parse(one))) == len(list(yaml.parse(many)))
    assert after[200].split("---\n", 2)[2] == after[1].split("---\n", 2)[2]  # the body as it was
    assert after[200].count("last_run:") == 1 and "runs:" not in after[200]


def test_a_legacy_runs_list_stops_growing(tmp_path: Path) -> None:
    legacy = "".join(f"- id: r{i}\n  result: done\n" for i in range(50))
    path = tmp_path / "old.md"
    path.write_text(CARD.format(title="Old card").replace("category: Bug\n", f"runs:\n{legacy}"))
    for number in range(1, 21):
        write_card(path, CardUpdate(state="Done", run=record(number)))
    card = load_card(path)
    assert len(card.runs) == 50 and card.last_run == record(20)
    assert f"runs:\n{legacy}" in path.read_text()


def test_a_write_back_from_a_card_just_read_parses_only_the_text_it_made(tmp_path: Path) -> None:
    path = tmp_path / "c.md"
    path.write_text(CARD.format(title=f"Card {uuid.uuid4()}"))  # text no other test parsed
    load_card(path)  # the run reads the card at its start
    composed, parsed = text_module._COMPOSED.misses, parse_module._PARSED.misses
    written = write_card(path, CardUpdate(state="Done", run=record(1)))
    assert text_module._COMPOSED.misses - composed == 1  # the check of the new text, only
    assert parse_module._PARSED.misses - parsed == 1  # the card write_card returns
    assert load_card(path) == written  # the watcher reading the file again: no parse at all
    assert (text_module._COMPOSED.misses, parse_module._PARSED.misses) == (composed + 1, parsed + 1)


def test_cached_parses_do_not_share_what_a_caller_can_change() -> None:
    text = CARD.format(title=f"Card {uuid.uuid4()}").replace(
        "category: Bug\n", "last_run: {id: a, evidence: [x]}\n"
    )
    first, _ = parse_card(text, Path("a.md"))
    assert first is not None and first.last_entry is not None
    first.last_entry["evidence"].append("changed by a caller")
    first.criteria.clear()
    again, _ = parse_card(text, Path("b.md"))
    assert again is not None and again.path == Path("b.md")
    assert again.last_entry == {"id": "a", "evidence": ["x"]} and again.criteria == [
        "add(2, 3) is 5"
    ]


def test_a_cached_value_that_contains_itself_is_copied_as_one() -> None:
    text = CARD.format(title=f"Card {uuid.uuid4()}").replace(
        "category: Bug\n", "last_run: {id: a, evidence: &e [x, *e], again: *e}\n"
    )
    for _ in range(2):  # computed, then from the cache
        card, _ = parse_card(text, Path("a.md"))
        assert card is not None and card.last_entry is not None
        evidence = card.last_entry["evidence"]
        assert evidence[1] is evidence and card.last_entry["again"] is evidence


def test_the_text_cache_is_bounded_by_entries_and_by_characters() -> None:
    calls: list[str] = []

    def compute(text: str) -> int:
        calls.append(text)
        return len(text)

    cache: TextCache[int] = TextCache(max_entries=2, max_chars=10)
    for text in ("aaa", "bbb", "aaa", "ccc"):  # "bbb" is the least recently used at the end
        cache.get(text, compute)
    assert calls == ["aaa", "bbb", "ccc"] and cache.hits == 1
    cache.get("aaa", compute)
    cache.get("bbb", compute)
    assert calls[-1] == "bbb"
    cache.get("x" * 11, compute)
    cache.get("x" * 11, compute)  # longer than the whole budget: computed, never kept
    assert calls[-2:] == ["x" * 11, "x" * 11]
    cache.get("dddddddd", compute)  # 8 characters: "bbb" and the older entries must go
    cache.get("bbb", compute)
    assert calls[-1] == "bbb" and cache.misses == 8
