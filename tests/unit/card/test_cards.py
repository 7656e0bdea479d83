"""Cards: parsing with exact problem lines, byte-exact write-back, edits, files on disk."""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.card.card import (
    Card,
    CardError,
    card_key,
    card_slug,
    find_cards,
    load_card,
    parse_card,
    write_card,
)
from cardrunner.card.parse import CardProblem
from cardrunner.card.record import CardUpdate, RunRecord
from cardrunner.card.text import CARD_STATES, split_lines
from cardrunner.card.writeback import card_edits, update_card_text

EXAMPLE = """\
---
title: Deleting an item should ask first
state: New            # New | In Work | Review | Done | Failed
category: Improvement
---
Free text describing the bug or feature.

**Acceptance criteria**

- Clicking "Delete selected" with a row selected shows a confirmation dialog
  naming the item.
- "Yes" removes the row and updates the totals; "No" leaves everything as is.
"""

HEADING_STYLE = """\
---
title: Totals in the footer
state: In Work
---
The footer shows the sum of all rows.

## Acceptance criteria

* The footer shows "Total: 0.00" for an empty list.
1. Adding a row for 2.50 changes it to "Total: 2.50",
   without reloading the page.
2) Removing that row changes it back.

## Notes

Ask Maria about rounding.
"""

BODY = "## Acceptance criteria\n- It works.\n"
PATH = Path("cards/x.md")
RUN: dict[str, Any] = {
    "id": "20261129-1015-x",
    "started": "2026-11-29T10:15:00Z",
    "result": "failed",
    "reason": "max_rounds",
    "rounds": 60,
    "tokens": 123456,
    "cost_usd": 1.25,
    "commit": None,
    "log": ".cardrunner/runs/20261129-1015-x.jsonl",
}


def parse(text: str) -> Card:
    card, problems = parse_card(text, PATH)
    assert card is not None, problems
    return card


def problems_of(text: str) -> list[tuple[int, str, str]]:
    return [(p.line, p.message, p.severity) for p in parse_card(text, PATH)[1]]


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    """The old lines replaced and the new lines put in their place, over all changed blocks."""
    removed: list[str] = []
    added: list[str] = []
    for start, _, end, _, replacement in card_edits(old, new):
        removed += split_lines(old)[start:end]
        added += split_lines(replacement)
    return removed, added


def apply_edits(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply LSP-style edits (UTF-16 characters) the way an editor does."""

    def offset(line: int, char: int) -> int:
        lines = split_lines(text)
        base = sum(len(x) for x in lines[:line])
        units, chars = 0, 0
        rest = lines[line] if line < len(lines) else ""
        while units < char:
            units += 2 if ord(rest[chars]) > 0xFFFF else 1
            chars += 1
        return base + chars

    for start_line, start_char, end_line, end_char, new in sorted(edits, reverse=True):
        text = text[: offset(start_line, start_char)] + new + text[offset(end_line, end_char) :]
    return text


# --- parsing ---------------------------------------------------------------------------------


def test_parses_the_design_example_with_a_wrapped_bullet() -> None:
    card = parse(EXAMPLE)
    assert card.title == "Deleting an item should ask first"
    assert (card.state, card.category, card.reason, card.runs) == ("New", "Improvement", None, [])
    assert card.title_line == 1
    assert card.description == "Free text describing the bug or feature."
    assert card.criteria == [
        'Clicking "Delete selected" with a row selected shows a confirmation dialog naming the item.',
        '"Yes" removes the row and updates the totals; "No" leaves everything as is.',
    ]
    assert card.criteria_lines == [9, 11]
    assert card.text == EXAMPLE and card.path == PATH


def test_parses_a_heading_with_star_and_numbered_bullets_and_a_following_section() -> None:
    card = parse(HEADING_STYLE)
    assert card.criteria == [
        'The footer shows "Total: 0.00" for an empty list.',
        'Adding a row for 2.50 changes it to "Total: 2.50", without reloading the page.',
        "Removing that row changes it back.",
    ]
    assert card.criteria_lines == [8, 9, 11]
    assert card.state == "In Work" and card.category is None
    assert card.description == (
        "The footer shows the sum of all rows.\n\n## Notes\n\nAsk Maria about rounding."
    )


@pytest.mark.parametrize(
    "heading",
    [
        "## Acceptance criteria",
        "### Acceptance Criteria:",
        "# acceptance criteria #",
        "**Acceptance criteria:**",
        "__Acceptance criteria__",
        "Acceptance criteria:",
        "Acceptance criteria\n-------------------",
        "Acceptance criteria\n===",
    ],
)
def test_accepts_every_common_way_to_write_the_heading(heading: str) -> None:
    card = parse(f"---\ntitle: t\n---\nIntro.\n\n{heading}\n\n- [ ] first\n- [x] second\n")
    assert card.criteria == ["first", "second"]
    assert card.description == "Intro."


def test_nested_bullets_lazy_lines_and_loose_lists_belong_to_their_criterion() -> None:
    text = (
        "---\ntitle: t\n---\n## Acceptance criteria\n"
        "- one\n  - detail a\n    - detail b\n"
        "- two\nlazily continued\n\n"
        "- three after a blank line\n\n  still three\n\n"
        "Closing remark.\n"
    )
    card = parse(text)
    assert card.criteria == [
        "one - detail a - detail b",
        "two lazily continued",
        "three after a blank line still three",
    ]
    assert card.criteria_lines == [4, 7, 10]
    assert card.description == "Closing remark."


def test_a_heading_inside_a_code_fence_is_not_the_criteria_section() -> None:
    text = (
        "---\ntitle: t\n---\n```\n## Acceptance criteria\n- not this\n```\n"
        "## Acceptance criteria\n- this\n"
    )
    card = parse(text)
    assert (card.criteria, card.criteria_lines) == (["this"], [8])


def test_crlf_and_lone_cr_cards_parse_with_editor_line_numbers() -> None:
    for newline in ("\r\n", "\r"):
        card = parse(EXAMPLE.replace("\n", newline))
        assert card.criteria_lines == [9, 11] and card.title_line == 1
        assert card.criteria[0].endswith("naming the item.")


def test_missing_state_means_new_and_scalars_stay_as_written() -> None:
    card = parse("---\ntitle: 2026-01-01\ncategory: 42\nreason: yes\n---\n" + BODY)
    assert (card.state, card.title, card.category, card.reason) == (
        "New",
        "2026-01-01",
        "42",
        "yes",
    )


def test_runs_and_reason_are_read() -> None:
    text = (
        "---\ntitle: t\nstate: Failed\nreason: max_cost\nruns:\n"
        "  - id: a\n    result: failed\n  - id: b\n---\n" + BODY
    )
    card = parse(text)
    assert card.reason == "max_cost"
    assert card.runs == [{"id": "a", "result": "failed"}, {"id": "b"}]
    assert card.last_entry == {"id": "b"} and card.last_run == RunRecord(id="b")


def test_prompt_numbers_criteria_from_one_and_says_so() -> None:
    prompt = parse(EXAMPLE).prompt()
    assert prompt.startswith(
        "THE CARD\n--------\nTitle: Deleting an item should ask first\nCategory: Improvement\n"
    )
    assert "Free text describing the bug or feature." in prompt
    assert "numbered from 1" in prompt and "report_criterion" in prompt
    assert '\n1. Clicking "Delete selected"' in prompt
    assert '\n2. "Yes" removes the row' in prompt
    assert "\n0. " not in prompt and "\n3. " not in prompt


@pytest.mark.parametrize(
    ("stem", "words"),
    [("Delete Ä item (v2)", "delete-a-item-v2"), ("Ünïcödé", "unicode"), ("中文", "card")],
)
def test_slug_reads_as_lowercase_ascii_words_then_a_hash(
    tmp_path: Path, stem: str, words: str
) -> None:
    slug = card_slug(tmp_path / "cards" / f"{stem}.md", tmp_path)
    assert re.fullmatch(re.escape(words) + "-[0-9a-f]{8}", slug), slug


def test_look_alike_cards_have_distinct_identities(tmp_path: Path) -> None:
    """The issue's collisions: path vs title, scripts without ASCII, width and case forms."""
    names = [
        "cards/Addition Adds.md",
        "cards/sub/addition-adds.md",
        "cards/修复.md",
        "cards/добавить.md",
        "cards/ｍａｉｎ.md",
        "cards/main.md",
        "cards/Main.md",
    ]
    slugs = [card_slug(tmp_path / n, tmp_path) for n in names]
    assert len(set(slugs)) == len(names), slugs
    assert slugs[4].startswith("main-") and slugs[5].startswith("main-")


def test_identity_is_the_same_from_any_spelling_of_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards/x.md").write_text("")
    (tmp_path / "link.md").symlink_to(tmp_path / "cards/x.md")
    monkeypatch.chdir(tmp_path / "cards")
    spellings = [
        tmp_path / "cards/x.md",
        Path("cards/x.md"),
        tmp_path / "cards/../cards/x.md",
        tmp_path / "link.md",
    ]
    assert {card_slug(p, tmp_path) for p in spellings} == {card_slug(spellings[0], tmp_path)}
    assert card_key(Path("cards/x.md"), tmp_path) == "cards/x.md"


def _is_name(name: str) -> bool:
    return "/" not in name and "\0" not in name and name not in (".", "..")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12).filter(_is_name), min_size=2, unique=True))
def test_distinct_card_paths_never_share_an_identity(names: list[str]) -> None:
    root = Path("/nonexistent-root")
    slugs = {card_slug(root / "cards" / f"{n}.md", root) for n in names}
    assert len(slugs) == len(names)


# --- problems, each on its exact line ---------------------------------------------------------

STATE_MESSAGE = "unknown state 'Doing' (expected one of New, In Work, Review, Done, Failed)"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 0, "no front matter"),
        ("title: x\n" + BODY, 0, "no front matter"),
        ("--- title: x\n---\n" + BODY, 0, "no front matter"),
        ("---\ntitle: x\n" + BODY, 0, "not closed"),
        ("---\ntitle: x\n  bad: indent\n---\n" + BODY, 2, "mapping values are not allowed"),
        ("---\r\ntitle: x\r\n\r\n  bad: indent\r\n---\r\n" + BODY, 3, "not valid YAML"),
        ("---\ncategory: a\u2028b\ntitle: x\n---\n" + BODY, 2, "not valid YAML"),
        ("---\ntitle: x\nstate: [New\n---\n" + BODY, 3, "not valid YAML"),
        ("---\ntitle: x\nstate: \x07\n---\n" + BODY, 2, "U+0007"),
        ("---\ntitle: !!python/object:os.system x\n---\n" + BODY, 1, "constructor"),
        ("---\n- a\n- b\n---\n" + BODY, 1, "must be 'key: value' lines"),
        ("---\n\njust text\n---\n" + BODY, 2, "must be 'key: value' lines"),
        ("---\n" + "[" * 3000 + "\n---\n" + BODY, 1, "cannot be read as YAML"),
        ("---\n---\n" + BODY, 0, "missing title"),
        ("---\nstate: New\n---\n" + BODY, 0, "missing title"),
        ("---\nstate: New\ntitle:\n---\n" + BODY, 2, "the title is empty"),
        ("---\nstate: New\n\ntitle: '  '\n---\n" + BODY, 3, "the title is empty"),
        ("---\ntitle: [a]\n---\n" + BODY, 1, "'title' should be text"),
        ("---\ntitle: t\n\nstate: Doing   # hm\n---\n" + BODY, 3, STATE_MESSAGE),
        ("---\ntitle: t\nstate:\n  Doing\n---\n" + BODY, 3, STATE_MESSAGE),
        ("---\ntitle: t\nstate:\n---\n" + BODY, 2, "the state is empty (expected one of New"),
        ("---\ntitle: t\nstate: [Done]\n---\n" + BODY, 2, "the state is not text"),
        ("---\ntitle: t\n---\nJust text.\n", 3, "no acceptance criteria"),
        ("---\ntitle: t\n---", 2, "no acceptance criteria"),
        ("---\ntitle: t\n---\nText.\n\n## Acceptance criteria\n\nNone yet.\n", 5, "no bullets"),
        ("---\ntitle: t\n---\n**Acceptance criteria**\n## Next\n- x\n", 3, "no bullets"),
    ],
)
def test_each_error_is_reported_on_its_line(text: str, line: int, fragment: str) -> None:
    card, problems = parse_card(text, PATH)
    assert card is None
    assert [p for p in problems if p.severity == "error"], problems
    first = problems[0]
    assert (first.line, first.severity) == (line, "error"), problems
    assert fragment in first.message


def test_unterminated_front_matter_spans_the_file() -> None:
    (problem,) = parse_card("---\ntitle: x\nstate: New\n", PATH)[1]
    assert problem == CardProblem(0, problem.message, "error", end_line=3)


def test_problems_from_front_matter_and_body_are_reported_together() -> None:
    assert problems_of("---\ntitle: t\nstate: Doing\n---\nno criteria\n") == [
        (2, STATE_MESSAGE, "error"),
        (4, problems_of("---\ntitle: t\n---\nx\n")[0][1], "error"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\ntitle: t\nruns: 5\n---\n" + BODY, [(2, "'runs' should be a list")]),
        (
            "---\ntitle: t\nruns:\n  - id: a\n  - oops\n---\n" + BODY,
            [(4, "run 1 is not a mapping")],
        ),
        ("---\ntitle: t\nstate: New\nstate: Done\n---\n" + BODY, [(3, "'state' is set more")]),
        ("---\ntitle: t\ncategory: {a: 1}\n---\n" + BODY, [(2, "'category' should be text")]),
        ("---\ntitle: t\n---\n## Acceptance criteria\n- a\n- [ ]\n", [(5, "empty criterion")]),
    ],
)
def test_warnings_come_with_a_card(text: str, expected: list[tuple[int, str]]) -> None:
    card, problems = parse_card(text, PATH)
    assert card is not None
    assert [(p.line, p.severity) for p in problems] == [(line, "warning") for line, _ in expected]
    for problem, (_, fragment) in zip(problems, expected, strict=True):
        assert fragment in problem.message


def test_card_error_reads_like_compiler_output(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cards").mkdir()
    Path("cards/x.md").write_text("---\ntitle: t\nstate: Doing\n---\n" + BODY)
    with pytest.raises(CardError) as caught:
        load_card(Path("cards/x.md"))
    assert str(caught.value) == f"cards/x.md:3: {STATE_MESSAGE}"
    assert caught.value.path == Path("cards/x.md") and len(caught.value.problems) == 1
    warning = CardError(PATH, [CardProblem(4, "odd", "warning")])
    assert str(warning) == "cards/x.md:5: warning: odd"


def test_load_card_reports_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes("---\ntitle: Müll\n---\n".encode("latin-1"))
    for path in (tmp_path / "latin1.md", tmp_path / "missing.md"):
        with pytest.raises(CardError, match="cannot read the card"):
            load_card(path)
    (tmp_path / "ok.md").write_bytes(EXAMPLE.replace("\n", "\r\n").encode())
    assert load_card(tmp_path / "ok.md").text == EXAMPLE.replace("\n", "\r\n")


# --- write-back ---------------------------------------------------------------------------------


def test_setting_the_state_changes_only_its_value_and_keeps_the_comment() -> None:
    new = update_card_text(EXAMPLE, state="In Work")
    assert new == EXAMPLE.replace("state: New   ", "state: In Work   ")
    assert changed_lines(EXAMPLE, new) == (
        ["state: New            # New | In Work | Review | Done | Failed\n"],
        ["state: In Work            # New | In Work | Review | Done | Failed\n"],
    )
    assert parse(new).state == "In Work"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('state: "New"', "state: Done"),
        ("state: 'New'  # quoted", "state: Done  # quoted"),
        ("state:", "state: Done"),
        ("state:    # empty", "state: Done    # empty"),
        ("state: |\n  New", "state: Done"),
    ],
)
def test_state_values_in_any_style_are_replaced_in_place(line: str, expected: str) -> None:
    text = f"---\ntitle: t\n{line}\ncategory: c\n---\n" + BODY
    assert update_card_text(text, state="Done") == text.replace(line, expected)


def test_a_missing_state_is_added_after_the_title_and_reason_after_it() -> None:
    text = "---\n# my card\ntitle: t\ncategory: c\n---\n" + BODY
    new = update_card_text(text, state="Failed", reason="rejected")
    assert new == text.replace("title: t\n", "title: t\nstate: Failed\nreason: rejected\n")


def test_reason_is_added_after_the_state_replaced_in_place_and_removed() -> None:
    added = update_card_text(EXAMPLE, state="Failed", reason="max_cost")
    assert added.splitlines()[2:4] == [
        "state: Failed            # New | In Work | Review | Done | Failed",
        "reason: max_cost",
    ]
    replaced = update_card_text(added, reason="tool_errors")
    assert replaced == added.replace("reason: max_cost", "reason: tool_errors")
    removed = update_card_text(replaced, state="New", reason=False)
    assert removed == EXAMPLE
    assert update_card_text(EXAMPLE, reason=False) == EXAMPLE


def test_block_and_duplicate_reasons_are_handled() -> None:
    text = "---\ntitle: t\nreason: |\n  two\n  lines\ncategory: c\nreason: x # c\n---\n" + BODY
    assert update_card_text(text, reason="y") == text.replace("x # c", "y # c")
    assert update_card_text(text, reason=False) == "---\ntitle: t\ncategory: c\n---\n" + BODY


@pytest.mark.parametrize(
    "reason",
    [
        "a: b",
        "# not a comment",
        "value # with hash",
        'quote " and \\ backslash',
        "line\nbreak\r\nand more",
        "tab\there",
        "  leading and trailing  ",
        "",
        "123",
        "1.5",
        "true",
        "yes",
        "null",
        "~",
        "2026-11-29",
        "- dash",
        "[not, a, list]",
        "{not: a, map}",
        "'single'",
        "@at `tick` %percent !bang *star &amp |pipe >gt ?q",
        "é ü 中文 🎉",
        "\u2028 \u2029 \x85 \ufeff \x00 \x1b \x7f",
        "---",
        "...",
    ],
)
def test_reasons_with_special_characters_round_trip(reason: str) -> None:
    new = update_card_text(EXAMPLE, state="Failed", reason=reason)
    card = parse(new)
    assert card.reason == reason
    assert changed_lines(EXAMPLE, new)[0] == [EXAMPLE.splitlines(keepends=True)[2]]
    assert new.endswith(EXAMPLE[EXAMPLE.index("category:") :])


def test_a_run_is_recorded_on_one_line_in_key_order() -> None:
    """One line, so the card's own text is not pushed down by ten lines of record."""
    scrambled = dict(reversed(list(RUN.items())), extra={"model": "m", "n": [1, 2]})
    new = update_card_text(EXAMPLE, run=scrambled)
    assert new == EXAMPLE.replace(
        "category: Improvement\n",
        "category: Improvement\n"
        'last_run: {id: 20261129-1015-x, started: "2026-11-29T10:15:00Z", result: failed, '
        "reason: max_rounds, rounds: 60, tokens: 123456, cost_usd: 1.25, "
        "log: .cardrunner/runs/20261129-1015-x.jsonl, extra: {model: m, n: [1, 2]}}\n",
    )
    assert len(new.splitlines()) == len(EXAMPLE.splitlines()) + 1
    expected = {k: v for k, v in scrambled.items() if v is not None}
    card = parse(new)
    assert card.last_entry == expected and card.runs == []


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        ("last_run:\n  id: a\n  result: done  # ok\n  mine: 1\n", "last_run: {id: b}\n"),
        ("last_run:  # newest\n    id: a\n", "last_run: {id: b}  # newest\n"),
        ("last_run:\n  id: a\n  log: |\n    x\n\n# end\n", "last_run: {id: b}\n\n# end\n"),
        ("last_run: {id: a, rounds: 3}  # flow\n", "last_run: {id: b}  # flow\n"),
        ("last_run:\n", "last_run: {id: b}\n"),
        ("last_run: ~  # c\n", "last_run: {id: b}  # c\n"),
        ("last_run: 5\n", "last_run: {id: b}\n"),
        ("last_run:\n- a\n- b\n", "last_run: {id: b}\n"),
        ("'last_run' :\n  id: a\n", "'last_run' : {id: b}\n"),
    ],
)  # fmt: skip
def test_last_run_is_replaced_where_it_stands(last: str, expected: str) -> None:
    text = "---\ntitle: t\n" + last + "state: New\n---\n" + BODY
    new = update_card_text(text, run={"id": "b"})
    assert new == text.replace(last, expected)
    assert parse(new).last_entry == {"id": "b"}


@pytest.mark.parametrize(
    "runs",
    [
        "runs:\n- id: a\n  result: done  # ok\n",
        "runs:\n  - id: a\n    log: |\n      x\n\n# end\n",
        "runs: [{id: a}]\n",
        "runs: 5\n",
        "runs: {a: 1}\n",
    ],
)
def test_a_legacy_runs_list_stays_byte_for_byte_and_last_run_is_added(runs: str) -> None:
    text = "---\ntitle: t\n" + runs + "state: New\n---\n" + BODY
    before = parse(text)
    new = update_card_text(text, state="Done", run={"id": "b"})
    assert new == text.replace("state: New\n", "state: Done\nlast_run: {id: b}\n")
    card = parse(new)
    assert card.runs == before.runs and card.last_run == RunRecord(id="b")


def test_a_legacy_card_reads_its_last_run_from_the_runs_list() -> None:
    text = "---\ntitle: t\nruns:\n- id: a\n  commit: aaaa\n- id: b\n  commit: bbbb\n---\n" + BODY
    card = parse(text)
    assert card.last_run == RunRecord(id="b", commit="bbbb")
    assert card.recorded_commits == ["bbbb", "aaaa"]
    newer = parse(update_card_text(text, run={"id": "c", "commit": "cccc"}))
    assert newer.last_run == RunRecord(id="c", commit="cccc")
    assert newer.recorded_commits == ["cccc", "bbbb", "aaaa"]


@pytest.mark.parametrize("value", ["5", "[a, b]", "oops", "|\n  text"])
def test_a_malformed_last_run_reads_as_missing_with_a_warning(value: str) -> None:
    text = f"---\ntitle: t\nruns:\n- id: old\nlast_run: {value}\n---\n" + BODY
    card, problems = parse_card(text, PATH)
    assert card is not None and card.last_run is None and card.last_entry is None
    assert [(p.line, p.severity) for p in problems] == [(4, "warning")]
    assert "'last_run' should be a mapping" in problems[0].message
    assert parse(update_card_text(text, run={"id": "b"})).last_run == RunRecord(id="b")


def test_run_values_of_every_type_read_back() -> None:
    run = {
        "id": "x",
        "started": datetime(2026, 11, 29, 10, 15, tzinfo=UTC),
        "rounds": 0,
        "cost_usd": 1e-05,
        "tokens": 10**20,
        "ok": True,
        "path": Path("a/b"),
        "weird": 'a: "b" # c',
    }
    last = parse(update_card_text(EXAMPLE, run=run)).last_entry
    assert last == {**run, "started": "2026-11-29T10:15:00+00:00", "path": "a/b"}


def test_crlf_no_final_newline_comments_and_unicode_survive_repeated_updates() -> None:
    original = (
        "---\r\n# Karte für die Übersicht 🎉\r\ntitle: Ünïcödé — title\r\n"
        "state: New   # board column\r\n\r\ncategory: Fehler  # kind\r\n---\r\n"
        "Beschreibung: ä ö ü\r\n\r\n## Acceptance criteria\r\n- Läuft.\r\n- Still läuft."
    )
    text = original
    for number, state in enumerate(["In Work", "Review", "Failed", "In Work", "Done"]):
        reason: str | Literal[False] = (
            "rejected: zu langsam # wirklich" if state == "Failed" else False
        )
        text = update_card_text(text, state=state, reason=reason, run={"id": f"r{number}"})
        assert text.count("\n") == text.count("\r\n")
        body_start = original.index("---\r\nBeschreibung")
        assert text.endswith(original[body_start:])
        assert text.startswith("---\r\n# Karte für die Übersicht 🎉\r\ntitle: Ünïcödé — title\r\n")
        assert f"\r\nstate: {state}   # board column\r\n" in text
        assert "\r\n\r\ncategory: Fehler  # kind\r\n" in text
        assert text.count("last_run:") == 1
    card = parse(text)
    assert (card.state, card.reason, card.criteria) == ("Done", None, ["Läuft.", "Still läuft."])
    assert card.last_entry == {"id": "r4"}


def test_a_card_without_a_body_or_final_newline_gets_its_run_before_the_closing_line() -> None:
    assert update_card_text("---\ntitle: t\n---", run={"id": "a"}) == (
        "---\ntitle: t\nlast_run: {id: a}\n---"
    )
    assert update_card_text("---\r---", state="Done") == "---\rstate: Done\r---"


def test_an_indented_front_matter_keeps_its_indentation() -> None:
    text = "---\n  title: t\n  category: c\n---\n" + BODY
    assert update_card_text(text, state="Done", run={"id": "a"}) == (
        "---\n  title: t\n  state: Done\n  category: c\n  last_run: {id: a}\n---\n" + BODY
    )
    again = update_card_text(update_card_text(text, run={"id": "a"}), run={"id": "b"})
    assert again == "---\n  title: t\n  category: c\n  last_run: {id: b}\n---\n" + BODY


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        (EXAMPLE, {"state": "Doing"}, "unknown state 'Doing'"),
        (BODY, {"state": "Done"}, "front matter is missing"),
        ("---\ntitle: t\n", {"state": "Done"}, "front matter is unterminated"),
        ("---\ntitle: [\n---\n", {"state": "Done"}, "not valid YAML"),
        ("---\n{title: t}\n---\n", {"state": "Done"}, "block-style mapping"),
        ("---\n- a\n---\n", {"state": "Done"}, "block-style mapping"),
        ("---\nbase: &b {state: New}\n<<: *b\n---\n", {"state": "Done"}, "without changing"),
    ],
)
def test_update_refuses_what_it_cannot_do_safely(
    text: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        update_card_text(text, **kwargs)


# --- card_edits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old",
    [EXAMPLE, EXAMPLE.replace("\n", "\r\n"), EXAMPLE.rstrip("\n"), "---\ntitle: t\n---"],
)
def test_card_edits_turn_the_old_text_into_the_new(old: str) -> None:
    for kwargs in (
        {"state": "Done"},
        {"reason": "x"},
        {"run": RUN},
        {"state": "Failed", "run": RUN},
    ):
        new = update_card_text(old, **kwargs)
        edits = card_edits(old, new)
        assert apply_edits(old, edits) == new
        assert all(edit[1] == 0 and edit[3] == 0 for edit in edits)
        ends = [(edit[0], edit[2]) for edit in edits]
        assert all(a[1] <= b[0] for a, b in pairwise(ends)), edits
    assert card_edits(old, old) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("a\n😀é", "a\nb", [(1, 0, 1, 3, "b")]),
        ("a\nb\nc\n", "a\nB\nc\n", [(1, 0, 2, 0, "B\n")]),
        ("a\nb\n", "a\nb\nc\n", [(2, 0, 2, 0, "c\n")]),
        ("a\nb", "", [(0, 0, 1, 1, "")]),
        ("", "x", [(0, 0, 0, 0, "x")]),
        ("a\r\nb", "a\nb", [(0, 0, 1, 0, "a\n")]),
        ("a\nb\nc\n", "A\nb\nC\n", [(0, 0, 1, 0, "A\n"), (2, 0, 3, 0, "C\n")]),
    ],
)
def test_card_edits_cover_the_changed_lines(
    old: str, new: str, expected: list[tuple[int, int, int, int, str]]
) -> None:
    assert card_edits(old, new) == expected
    assert apply_edits(old, expected) == new


def test_card_edits_leave_lines_between_the_changes_alone() -> None:
    new = update_card_text(EXAMPLE, state="Failed", reason="max_cost", run={"id": "r"})
    assert card_edits(EXAMPLE, new) == [
        (2, 0, 3, 0, "state: Failed            # New | In Work | Review | Done | Failed\n"
                     "reason: max_cost\n"),
        (4, 0, 4, 0, "last_run: {id: r}\n"),
    ]  # fmt: skip


def test_card_edits_count_characters_in_the_negotiated_encoding() -> None:
    assert card_edits("😀é", "", position_encoding="utf-8")[0][3] == 6
    assert card_edits("😀é", "", position_encoding="utf-16")[0][3] == 3
    assert card_edits("😀é", "", position_encoding="utf-32")[0][3] == 2


# --- files --------------------------------------------------------------------------------------


def test_write_card_replaces_the_file_atomically_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "cards" / "ask.md"
    path.parent.mkdir()
    path.write_bytes(EXAMPLE.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    inode = path.stat().st_ino
    change = CardUpdate(state="Failed", reason="rejected", run=RunRecord(**RUN))
    card = write_card(path, change)
    assert (card.state, card.reason, card.last_run) == ("Failed", "rejected", RunRecord(**RUN))
    assert card.last_run == RunRecord(**RUN)
    assert path.read_bytes().decode() == card.text
    assert card.text == update_card_text(EXAMPLE.replace("\n", "\r\n"), state="Failed",
                                         reason="rejected", run=RUN)  # fmt: skip
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode
    assert sorted(os.listdir(path.parent)) == ["ask.md"]


def test_write_card_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text(EXAMPLE)
    (tmp_path / "link.md").symlink_to("real.md")
    assert write_card(tmp_path / "link.md", CardUpdate(state="Review")).state == "Review"
    assert (tmp_path / "link.md").is_symlink()
    assert load_card(tmp_path / "real.md").state == "Review"


def test_write_card_leaves_a_card_it_cannot_update_untouched(tmp_path: Path) -> None:
    path = tmp_path / "broken.md"
    path.write_text("---\ntitle: [\n---\n" + BODY)
    before = path.read_bytes()
    with pytest.raises(CardError, match=r"broken.md:1: cannot update the card"):
        write_card(path, CardUpdate(state="Done"))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["broken.md"]


def test_write_card_records_the_state_even_if_the_body_is_broken(tmp_path: Path) -> None:
    path = tmp_path / "nobody.md"
    path.write_text("---\ntitle: t\n---\nThe criteria were deleted meanwhile.\n")
    with pytest.raises(CardError, match="no acceptance criteria"):
        write_card(path, CardUpdate(state="Failed", reason="cancelled"))
    assert yaml.safe_load(path.read_text().split("---")[1]) == {
        "title": "t",
        "state": "Failed",
        "reason": "cancelled",
    }


def test_find_cards_lists_markdown_recursively_and_skips_editor_files(tmp_path: Path) -> None:
    names = [
        "b.md", "A.markdown", "sub/c.md", "sub/deeper/d.MD", ".hidden.md", ".#b.md", "b.md~",
        ".b.md.swp", "#b.md#", ".git/e.md", "notes.txt", ".b.md.123.tmp",
    ]  # fmt: skip
    for name in names:
        (tmp_path / "cards" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cards" / name).write_text("x")
    (tmp_path / "cards" / "folder.md").mkdir()
    found = find_cards(tmp_path)
    assert [p.relative_to(tmp_path / "cards").as_posix() for p in found] == [
        "A.markdown", "b.md", "sub/c.md", "sub/deeper/d.MD",
    ]  # fmt: skip
    assert find_cards(tmp_path, "elsewhere") == []
    assert find_cards(tmp_path / "cards", "sub") == [found[2], found[3]]


def test_states_are_the_board_columns() -> None:
    assert CARD_STATES == ("New", "In Work", "Review", "Done", "Failed")
