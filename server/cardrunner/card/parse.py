"""Reading a card's text into its fields, collecting every problem with the line it is on.

The language server parses a card on every keystroke and shows the problems as diagnostics, so
this never raises and never stops at the first problem: the front matter and the body are both
checked. Line numbers come from character offsets (PyYAML's marks), mapped to editor lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from cardrunner.card.backlog import BACKLOG_KEYS, DEFAULT_STATUSES, Board, state_of
from cardrunner.card.body import parse_body
from cardrunner.card.fields import read_fields
from cardrunner.card.text import (
    CARD_KEYS,
    CARD_STATES,
    CardLimitError,
    TextCache,
    compose,
    find_front_matter,
    line_starts,
    pairs,
)


@dataclass(frozen=True)
class CardProblem:
    """Something wrong with a card, on a 0-based line (editors show it as a diagnostic)."""

    line: int
    message: str
    severity: Literal["error", "warning"] = "error"
    end_line: int | None = None


KNOWN_KEYS = (*CARD_KEYS, *BACKLOG_KEYS)
"""Keys read or kept without a warning: cardrunner's own and Backlog.md's."""


def read_card(
    text: str, board: Board | None = None
) -> tuple[dict[str, Any] | None, list[CardProblem]]:
    """The keyword arguments for `Card` (all but path and text), or None if there is an error.

    `board` is the Backlog.md project the card is a task of: its statuses give `status:` its
    state and its Definition of Done is added to the criteria. The same text (and board) is
    parsed once (`_PARSED`); each caller gets its own copy of the mutable values, so a caller
    changing a card's list cannot change what the next one reads."""
    key = text if board is None else f"{board!r}\0{text}"
    fields, problems = _PARSED.get(key, lambda _: _Parser(text, board).parse())
    return (_fresh(fields, {}) if fields is not None else None), list(problems)


def _fresh(value: Any, memo: dict[int, Any]) -> Any:
    """A copy of the containers in YAML data: `copy.deepcopy` for just the types SafeLoader
    builds, at half its cost; `memo` keeps shared and self-containing values (`&a [*a]`) so."""
    if isinstance(value, dict):
        if id(value) not in memo:
            new_dict: dict[Any, Any] = {}
            memo[id(value)] = new_dict
            new_dict.update((k, _fresh(v, memo)) for k, v in value.items())
        return memo[id(value)]
    if isinstance(value, list):
        if id(value) not in memo:
            new_list: list[Any] = []
            memo[id(value)] = new_list
            new_list.extend(_fresh(v, memo) for v in value)
        return memo[id(value)]
    if isinstance(value, set):
        return set(value)  # members are hashable, so immutable
    if isinstance(value, tuple):  # !!pairs and !!omap build lists of tuples
        return tuple(_fresh(v, memo) for v in value)
    return value  # str, int, float, bool, None, bytes, date, datetime: immutable


_PARSED: TextCache[tuple[dict[str, Any] | None, list[CardProblem]]] = TextCache(
    max_entries=512, max_chars=4_000_000
)
"""Cards parsed lately, keyed by their whole text: a lens, a hover, the board and the watcher
asking about an unchanged card cost a dictionary look-up (and a copy of a few small values)."""


class _Parser:
    """One parse of one card text, collecting problems as it goes."""

    def __init__(self, text: str, board: Board | None) -> None:
        self.text, self.starts, self.board = text, line_starts(text), board
        self.problems: list[CardProblem] = []

    def line(self, offset: int) -> int:
        return min(max(bisect_right(self.starts, offset) - 1, 0), len(self.starts) - 1)

    def problem(
        self, line: int, message: str, severity: Literal["error", "warning"] = "error"
    ) -> None:
        self.problems.append(CardProblem(line, message, severity))

    def parse(self) -> tuple[dict[str, Any] | None, list[CardProblem]]:
        front = find_front_matter(self.text)
        if front == "missing":
            self.problem(0, "no front matter: a card starts with '---', 'title: …' and '---' lines")
            return None, self.problems
        if front == "unterminated":
            last = len(self.starts) - 1
            message = "the front matter is not closed: add a line '---' after it"
            return None, [CardProblem(0, message, end_line=last)]
        fields = self.front_matter(front.yaml_text(self.text), front.start, front.close_line)
        body = parse_body(self.text, front.close_line + 1)
        for line, message, severity in body.problems:
            self.problem(line, message, severity)
        if fields is None or any(p.severity == "error" for p in self.problems):
            return None, self.problems
        last = body.criteria_lines[-1] if body.criteria_lines else front.close_line
        have = {c.casefold() for c in body.criteria}
        for item in self.board.definition_of_done if self.board else ():
            if item.casefold() not in have:  # the project's Definition of Done, once
                body.criteria.append(item)
                body.criteria_lines.append(last)
                have.add(item.casefold())
        fields.update(
            description=body.description,
            criteria=body.criteria,
            criteria_lines=body.criteria_lines,
        )
        return fields, self.problems

    def front_matter(self, y: str, start: int, close_line: int) -> dict[str, Any] | None:
        """The card fields from the YAML, or None when it cannot be read as a mapping."""
        try:
            root, data = compose(y)
        except CardLimitError as error:  # hostile or absurd: refused before it costs anything
            at = self.line(start + error.problem_mark.index) if error.problem_mark else 1
            self.problem(
                min(at, close_line), f"the front matter cannot be read as YAML: {error.problem}"
            )
            return None
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            at = self.line(start + mark.index) if mark else 1
            detail = "; ".join(str(x) for x in (error.context, error.problem) if x)
            self.problem(min(at, close_line), f"the front matter is not valid YAML: {detail}")
            return None
        except yaml.reader.ReaderError as error:
            code = error.character if isinstance(error.character, int) else 0
            at = self.line(start + error.position)
            self.problem(at, f"the front matter contains a character YAML forbids (U+{code:04X})")
            return None
        except Exception as error:  # e.g. RecursionError on absurdly deep nesting
            self.problem(1, f"the front matter cannot be read as YAML ({type(error).__name__})")
            return None
        if root is None:
            root, data = MappingNode("tag:yaml.org,2002:map", []), {}
        if not isinstance(root, MappingNode) or not isinstance(data, dict):
            message = "the front matter must be 'key: value' lines (title, state, category)"
            self.problem(self.line(start + root.start_mark.index), message)
            return None
        return self.fields(root, data, start)

    def fields(self, root: MappingNode, data: dict[Any, Any], start: int) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in root.value:
            if isinstance(key, ScalarNode) and key.value in seen:
                message = f"'{key.value}' is set more than once; the last one counts"
                self.problem(self.line(start + key.start_mark.index), message, "warning")
            seen.add(key.value if isinstance(key, ScalarNode) else "")
        self.unknown_keys(root, start)

        def where(name: str, value: bool = False) -> int:
            found = pairs(root, name)
            node = found[-1][1 if value else 0] if found else None
            return self.line(start + node.start_mark.index) if node else 0

        title = self.text_value(data, root, "title", where("title"), "error")
        if "title" not in data:
            self.problem(0, "missing title: add a line 'title: …' to the front matter")
        elif data["title"] is None or (title is not None and not title.strip()):
            self.problem(where("title"), "the title is empty")
        state = self.state(data, root, where)
        runs = self.runs(root, data, start)
        return {
            "title": (title or "").strip(),
            "state": state,
            "category": self.text_value(data, root, "category", where("category"), "warning"),
            "reason": self.text_value(data, root, "reason", where("reason"), "warning"),
            "source": self.text_value(data, root, "source", where("source"), "warning"),
            "title_line": where("title"),
            "runs": runs,
            "last_entry": self.last_run(root, data, start, runs),
            **read_fields(data, lambda name: where(name, True), self.problem),
        }

    def state(
        self, data: dict[Any, Any], root: MappingNode, where: Callable[[str, bool], int]
    ) -> str | None:
        """`state:`, or without one Backlog.md's `status:` through the board; New by default."""
        if "state" not in data:
            return self.status(data, root, where("status", True)) if "status" in data else "New"
        state = self.text_value(data, root, "state", 0, None)
        if state not in CARD_STATES:
            allowed = ", ".join(CARD_STATES)
            if state is None:
                what = "the state is empty" if data["state"] is None else "the state is not text"
            else:
                what = f"unknown state {state!r}"
            self.problem(where("state", True), f"{what} (expected one of {allowed})")
        return state

    def status(self, data: dict[Any, Any], root: MappingNode, line: int) -> str | None:
        """A Backlog.md `status:` as a card state, through the project's statuses (None and a
        problem when the project has no such status)."""
        statuses = self.board.statuses if self.board else DEFAULT_STATUSES
        status = self.text_value(data, root, "status", line, None)
        state = state_of(status, statuses) if status is not None else None
        if state is None:
            what = f"unknown status {status!r}" if status is not None else "the status is empty"
            self.problem(line, f"{what} (this board's statuses: {', '.join(statuses)})")
        return state

    def unknown_keys(self, root: MappingNode, start: int) -> None:
        """Warn about keys cardrunner does not read: usually a typo (`sate: Done`) that would
        otherwise pass silently while the real key keeps its default."""
        for key, _ in root.value:
            name = key.value if isinstance(key, ScalarNode) else None
            if name in KNOWN_KEYS:
                continue
            close = get_close_matches(str(name), CARD_KEYS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(CARD_KEYS)}"
            message = f"unknown key {str(name)!r} is ignored ({hint})"
            self.problem(self.line(start + key.start_mark.index), message, "warning")

    def text_value(
        self,
        data: dict[Any, Any],
        root: MappingNode,
        name: str,
        line: int,
        severity: Literal["error", "warning"] | None,
    ) -> str | None:
        """A scalar as written (`title: 2026` stays "2026"); lists and mappings are a problem."""
        value = data.get(name)
        found = pairs(root, name)
        node: Node | None = found[-1][1] if found else None
        if value is None or isinstance(value, str):
            return value
        if isinstance(node, ScalarNode):
            return str(node.value)
        if isinstance(value, list | dict):
            if severity:
                self.problem(line, f"'{name}' should be text, not a list or mapping", severity)
            return None
        return str(value)

    def last_run(
        self, root: MappingNode, data: dict[Any, Any], start: int, runs: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """The newest run's record: `last_run:`, or in a card from before it, the last `runs:`
        entry. A `last_run:` that is not a mapping is a warning and reads as no record (the
        `runs:` list, if any, is older than whatever it was meant to say)."""
        if "last_run" not in data:
            return runs[-1] if runs else None
        value = data["last_run"]
        if value is None or isinstance(value, dict):
            return value
        found = pairs(root, "last_run")
        line = self.line(start + found[-1][0].start_mark.index) if found else 0
        message = "'last_run' should be a mapping (id: …, result: …); it is ignored"
        self.problem(line, message, "warning")
        return None

    def runs(self, root: MappingNode, data: dict[Any, Any], start: int) -> list[dict[str, Any]]:
        """A legacy `runs:` list (cards before `last_run:`); not a list of mappings: a warning."""
        value = data.get("runs")
        found = pairs(root, "runs")
        if value is None:
            return []
        line = self.line(start + found[-1][0].start_mark.index) if found else 0
        if not isinstance(value, list):
            self.problem(line, "'runs' should be a list of runs; it is ignored", "warning")
            return []
        nodes = found[-1][1].value if found and isinstance(found[-1][1], SequenceNode) else []
        for index, entry in enumerate(value):
            if not isinstance(entry, dict):
                at = (
                    self.line(start + nodes[index].start_mark.index) if index < len(nodes) else line
                )
                self.problem(at, f"run {index} is not a mapping; it is ignored", "warning")
        return [entry for entry in value if isinstance(entry, dict)]
