"""Property tests: no text makes the card parser raise, and write-back touches only its targets."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from yaml.nodes import MappingNode, Node, ScalarNode

from cardrunner.card import text as text_module
from cardrunner.card.card import parse_card
from cardrunner.card.text import CARD_STATES, RUN_KEYS, find_front_matter, line_starts, split_lines
from cardrunner.card.writeback import card_edits, update_card_text

PATH = Path("cards/p.md")

FRAGMENTS = [
    "---", "...", "--- ", "title: x", "title:", "title: ''", "state: Done", "state: Doing",
    "state:", "category: [", "category: {a: 1}", "reason: |", "  folded", "runs: 5", "runs:",
    "  - id: a", "- oops", "runs: [1, {id: b}]", "last_run:", "last_run: 5", "  id: a",
    "last_run: {id: a}", "## Acceptance criteria", "**Acceptance criteria**",
    "Acceptance criteria", "=====", "- a criterion", "* another", "1. third", "2) fourth",
    "  continued", "- [ ]", "```", "~~~", "\t", ": :", "{", "}", "[", "'", '"', "&a", "*a",
    "!!python/object:os.system", "!!binary ???", "? complex", "%YAML 1.1", "--- !tag", "<<: *a",
    "title: &t [*t]", "\x00", "\x07", "\ufeff", "\u2028", "\x85", "\ud800", "😀", "#", "# comment",
]  # fmt: skip
NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def fragment_texts(draw: st.DrawFn) -> str:
    """Card-like texts built from fragments that exercise every branch, plus random unicode."""
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)),
            max_size=25,
        )
    )
    newline = draw(NEWLINES)
    text = newline.join(parts)
    if draw(st.booleans()):
        text = "---" + newline + text
    return text + draw(st.sampled_from(["", newline]))


def check_problems(text: str) -> None:
    card, problems = parse_card(text, PATH)
    last_line = len(line_starts(text)) - 1
    for problem in problems:
        assert 0 <= problem.line <= last_line, (problem, last_line)
        assert problem.end_line is None or problem.line <= problem.end_line <= last_line
        assert problem.severity in ("error", "warning") and problem.message
    errors = [p for p in problems if p.severity == "error"]
    assert (card is None) == bool(errors)
    if card is not None:
        assert card.title.strip() and card.state in CARD_STATES and card.criteria
        assert len(card.criteria) == len(card.criteria_lines)
        assert all(0 <= line <= last_line for line in card.criteria_lines)
        assert card.criteria_lines == sorted(card.criteria_lines)
        assert card.prompt().startswith("THE CARD\n--------\n")


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(fragment_texts(), st.text()))
@example("---\n" + "[" * 3000 + "\n---\n")
@example("---\ntitle: x\n---\n## Acceptance criteria\n- a\n\x00")
def test_parse_card_never_raises_and_keeps_problems_inside_the_file(text: str) -> None:
    check_problems(text)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragment_texts(), st.sampled_from([*CARD_STATES, None]), st.one_of(st.none(), st.text()))
@example("---\n" + "[" * 3000 + "\n---\n", "Done", None)
def test_update_card_text_refuses_with_value_error_or_keeps_the_body(
    text: str, state: str | None, reason: str | None
) -> None:
    try:
        new = update_card_text(text, state=state, reason=reason, run={"id": "r"})
    except ValueError:
        return
    old_front, new_front = find_front_matter(text), find_front_matter(new)
    assert not isinstance(old_front, str) and not isinstance(new_front, str)
    assert (new[: new_front.start], new[new_front.end :]) == (
        text[: old_front.start],
        text[old_front.end :],
    )


# --- valid cards and their write-back -------------------------------------------------------------

WORDS = st.text(
    alphabet=st.characters(categories=["L", "N", "Zs", "P", "S"], exclude_characters="`~"),
    min_size=1,
    max_size=30,
).filter(lambda s: any(c.isalnum() for c in s) and "acceptance" not in s.lower())
ANY_TEXT = st.text(max_size=30)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    ANY_TEXT,
    st.lists(st.integers(), max_size=3),
)


def quoted(value: str) -> str:
    """A YAML double-quoted scalar written the way a person (or another tool) might."""
    return json.dumps(value)


@st.composite
def valid_cards(draw: st.DrawFn) -> str:
    nl = draw(NEWLINES)
    keys = [f"title: {quoted(draw(WORDS))}"]
    comment = draw(st.sampled_from(["", "  # column", "            # New | In Work"]))
    keys.append(f"state: {draw(st.sampled_from(CARD_STATES))}{comment}")
    if draw(st.booleans()):
        keys.append(f"category: {quoted(draw(ANY_TEXT))}")
    if draw(st.booleans()):
        keys.append(f"reason: {quoted(draw(ANY_TEXT))}")
    for name in draw(st.lists(st.sampled_from(["owner", "due", "tags"]), unique=True)):
        keys.append(f"{name}: {quoted(draw(ANY_TEXT))}  # mine")
    extra = draw(st.sampled_from(["", "# a comment", "x-extra: [1, 2]", "empty:"]))
    if extra:
        keys.append(extra)
    keys = draw(st.permutations(keys))
    style = draw(st.sampled_from(["none", "block0", "block2", "block4", "flow"]))
    entries = draw(st.lists(ANY_TEXT, max_size=3))
    if style == "flow":
        keys.append("runs: [" + ", ".join(f"{{id: {quoted(e)}}}" for e in entries) + "]")
    elif style != "none" and entries:
        indent = " " * int(style[-1])
        keys.append("runs:")
        keys.extend(f"{indent}- id: {quoted(e)}{nl}{indent}  result: done" for e in entries)
    last = draw(st.sampled_from(["none", "block2", "block4", "flow", "null"]))
    value = quoted(draw(ANY_TEXT))
    if last == "flow":
        keys.append(f"last_run: {{id: {value}, rounds: 3}}  # newest")
    elif last == "null":
        keys.append("last_run:")
    elif last != "none":
        indent = " " * int(last[-1])
        keys.append(f"last_run:{nl}{indent}id: {value}{nl}{indent}result: done  # mine")
    criteria = draw(st.lists(WORDS, min_size=1, max_size=4))
    body = [draw(WORDS), "", "## Acceptance criteria", ""] + [f"- {c.strip()}" for c in criteria]
    text = nl.join(["---", *[k for k in keys if k], "---", *body])
    return text + draw(st.sampled_from(["", nl]))


@st.composite
def updates(draw: st.DrawFn) -> dict[str, Any]:
    change: dict[str, Any] = {}
    if draw(st.booleans()):
        change["state"] = draw(st.sampled_from(CARD_STATES))
    reason: str | Literal[False] | None = draw(st.one_of(st.none(), st.just(False), ANY_TEXT))
    if reason is not None:
        change["reason"] = reason
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from([*RUN_KEYS, "extra"]), unique=True))
        change["run"] = {key: draw(VALUES) for key in keys}
    return change


def untargeted(yaml_lines: list[str]) -> list[str]:
    """The lines update_card_text must keep: all but the state, reasons and the `last_run:`
    key with its block (the generated front matter has its keys at column 0)."""
    kept, in_last_run = [], False
    for line in yaml_lines:
        in_last_run = line.startswith("last_run:") or (in_last_run and line[:1] in (" ", "\t"))
        if not (in_last_run or line.startswith(("state:", "reason:"))):
            kept.append(line)
    return kept


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_cards(), updates())
def test_updates_touch_only_their_targets_and_read_back(text: str, change: dict[str, Any]) -> None:
    card, problems = parse_card(text, PATH)
    assert card is not None, problems
    new = update_card_text(text, **change)

    old_front, new_front = find_front_matter(text), find_front_matter(new)
    assert not isinstance(old_front, str) and not isinstance(new_front, str)
    assert new[: new_front.start] == text[: old_front.start]
    assert new[new_front.end :] == text[old_front.end :]  # the closing line and the whole body
    kept = untargeted(split_lines(old_front.yaml_text(text)))
    new_lines = iter(split_lines(new_front.yaml_text(new)))
    assert all(line in new_lines for line in kept), "an untargeted line changed or moved"

    updated, problems = parse_card(new, PATH)
    assert updated is not None, problems
    assert updated.state == change.get("state", card.state)
    assert updated.reason == (
        None if change.get("reason") is False else change.get("reason", card.reason)
    )
    assert (updated.title, updated.criteria) == (card.title, card.criteria)
    shift = len(split_lines(new)) - len(split_lines(text))
    assert updated.criteria_lines == [line + shift for line in card.criteria_lines]
    assert updated.runs == card.runs  # a legacy list is never touched
    if "run" in change:
        written = {k: v for k, v in change["run"].items() if v is not None}
        assert same(updated.last_entry, written)
    else:
        assert updated.last_entry == card.last_entry
    assert apply(text, card_edits(text, new, position_encoding="utf-32")) == new
    assert endings(new) == endings(text), "a line ending of another style crept in"


def endings(text: str) -> set[str]:
    return {line[len(line.rstrip("\r\n")) :] for line in split_lines(text)} - {""}


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isinf(a) and a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def apply(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    starts = [*line_starts(text), len(text)]
    for start_line, start_char, end_line, end_char, new in reversed(edits):
        start = starts[start_line] + start_char
        text = text[:start] + new + text[starts[end_line] + end_char :]
    return text


# --- libyaml and the pure loader read a card the same way -----------------------------------------


def shape(node: Node | None, seen: frozenset[int] = frozenset()) -> Any:
    """A node tree as nested tuples of (kind, tag, value or children, style, marks); a node
    that contains itself (`&t [*t]`) shows as a back reference."""
    if node is None:
        return None
    if id(node) in seen:
        return ("back", node.start_mark.index)
    if isinstance(node, ScalarNode):
        style = node.style or None  # libyaml says "" for plain, the pure loader None
        return ("s", node.tag, node.value, style, node.start_mark.index, node.end_mark.index)
    inner = seen | {id(node)}
    children = (
        [shape(n, inner) for pair in node.value for n in pair]
        if isinstance(node, MappingNode)
        else [shape(n, inner) for n in node.value]
    )
    flow = bool(node.flow_style)  # block: libyaml says False, the pure loader None
    return (type(node).__name__, node.tag, flow, children, node.start_mark.index)


@pytest.mark.skipif(text_module._CLoader is None, reason="PyYAML without libyaml")
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(valid_cards(), fragment_texts()))
def test_libyaml_composes_what_the_pure_loader_composes(text: str) -> None:
    front = find_front_matter(text)
    y = front.yaml_text(text) if not isinstance(front, str) else text
    assert text_module._CLoader is not None
    if text_module._PURE_ONLY.search(y):
        return  # read by the pure loader alone
    try:
        c_node, c_data = text_module._compose_with(text_module._CLoader, y)
    except Exception:
        return  # the pure loader decides then (`_compose_uncached`)
    py_node, py_data = text_module._compose_with(text_module._PythonLoader, y)
    assert shape(c_node) == shape(py_node)
    assert repr(c_data) == repr(py_data)  # repr: NaN and self-containing lists compare too
