"""Writing back to a card file without touching anything else in it.

A card belongs to its user: it sits in their repository, in their diffs, with their comments and
their line endings. So the runner never re-serialises a card. `update_card_text` edits character
ranges found from PyYAML's node positions — the value of `state:`, a `reason:` line, the
`last_run:` record (one line) — and then checks its own output by parsing it again, so a card
it cannot edit safely raises `ValueError` instead of being damaged. That check is the one YAML parse a
write-back costs: the text it starts from was parsed when the card was read, and the parse of
the text it produced is the one the caller and the file watcher then read (both cached by text,
`text.compose`). `card_edits` turns such a change into the line-range edit an editor applies
with `workspace/applyEdit`.

The run record replaces `last_run:` rather than growing a list, so a card's front matter stays
the same size however many runs it has had, and it is one line, so the card's own text — the
description and the criteria — is not pushed down by it. A legacy `runs:` list (cards written before) is left
exactly as it is — the card is the user's file, and moving it would be a change nobody asked for;
it no longer grows.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from cardrunner.card.backlog import (
    DEFAULT_STATUSES,
    Board,
    is_backlog_task,
    status_of,
    write_result,
)
from cardrunner.card.text import (
    CARD_STATES,
    compose,
    content_end,
    find_front_matter,
    normalized,
    pairs,
    run_entry,
    scalar,
    split_lines,
)

_BREAK = re.compile(r"\r\n|\r|\n")

__all__ = ["card_edits", "update_card_text"]


def update_card_text(
    text: str,
    *,
    state: str | None = None,
    reason: str | Literal[False] | None = None,
    run: dict[str, Any] | None = None,
    board: Board | None = None,
    evidence: list[str] | None = None,
) -> str:
    """Set `state`, set (or with False remove) `reason`, make `run` the `last_run:`; nothing else.

    A Backlog.md task (a `status:` and no `state:`) gets its state as one of `board`'s statuses
    (Backlog.md's defaults without one), and a run's result in its own format as well:
    verified criteria ticked and the evidence as an implementation note (`backlog.py`).

    Only the targeted values and lines change: comments, spacing, key order, line endings, the
    body and a missing final newline all stay. New keys go after `state` (`reason`) or at the end
    of the front matter (`last_run`). None values in `run` are left out. Raises ValueError if the
    front matter is missing or broken, or the result would not read back.
    """
    if state is not None and state not in CARD_STATES:
        raise ValueError(f"unknown state {state!r} (expected one of {', '.join(CARD_STATES)})")
    front = find_front_matter(text)
    if isinstance(front, str):
        raise ValueError(f"the card's front matter is {front}")
    y = front.yaml_text(text)
    try:
        root, data = compose(y)
    except (yaml.YAMLError, RecursionError) as error:
        raise ValueError(f"the card's front matter is not valid YAML: {error}") from error
    if root is None:
        root, data = MappingNode("tag:yaml.org,2002:map", []), {}
    if not isinstance(root, MappingNode) or root.flow_style or not isinstance(data, dict):
        raise ValueError("the card's front matter must be a block-style mapping to be updated")
    edits = _Edits(y, root, front.newline)
    status = None
    if state is not None and "state" not in data and "status" in data:
        status = status_of(state, board.statuses if board else DEFAULT_STATUSES)
    anchor = edits.set_state(state, status)
    edits.set_reason(reason, anchor)
    if run is not None:
        edits.set_last_run(run)
    new_text = text[: front.start] + edits.apply() + text[front.end :]
    _check(new_text, data, ("status", status) if status else ("state", state), reason, run)
    if run is not None and status is not None and is_backlog_task(new_text):
        ledger = evidence if evidence is not None else run.get("evidence")  # an older record's
        new_text = write_result(new_text, {**run, "evidence": ledger}, board, front.newline)
    return new_text


class _Edits:
    """Offset-based replacements in the front matter YAML, applied back to front in one go."""

    def __init__(self, y: str, root: MappingNode, newline: str) -> None:
        self.y, self.root, self.nl = y, root, newline
        self.edits: list[tuple[int, int, str]] = []
        first = root.value[0][0].start_mark.index if root.value else 0
        self.indent = y[self._line_start(first) : first] if root.value else ""

    def _line_start(self, offset: int) -> int:
        return max(self.y.rfind("\n", 0, offset), self.y.rfind("\r", 0, offset)) + 1

    def _next_line(self, offset: int) -> int:
        if offset > 0 and self.y[offset - 1] in "\r\n":
            return offset
        match = _BREAK.search(self.y, offset)
        return match.end() if match else len(self.y)

    def _replace_value(self, value: Node, new: str) -> None:
        start = value.start_mark.index
        if isinstance(value, ScalarNode) and start == value.end_mark.index:
            self.edits.append((start, start, " " + new))
            return
        end = content_end(value, self.y)
        while end > start and self.y[end - 1] in " \t\r\n":
            end -= 1
        self.edits.append((start, end, new))

    def set_state(self, state: str | None, status: str | None = None) -> int:
        """Replace the state's value (or add the key), or with `status` the Backlog.md status's
        value; returns where a new `reason:` goes."""
        found = pairs(self.root, "status" if status is not None else "state")
        if status is not None and found:
            self._replace_value(found[-1][1], scalar(status))
            return self._next_line(content_end(found[-1][1], self.y))
        if found:
            anchor = self._next_line(content_end(found[-1][1], self.y))
        else:
            title = pairs(self.root, "title")
            anchor = self._next_line(content_end(title[-1][1], self.y)) if title else 0
        if state is not None and found:
            self._replace_value(found[-1][1], scalar(state))
        elif state is not None:
            self.edits.append((anchor, anchor, f"{self.indent}state: {scalar(state)}{self.nl}"))
        return anchor

    def set_reason(self, reason: str | Literal[False] | None, anchor: int) -> None:
        """Replace, add after the state (or where it would go), or (False) remove every entry."""
        found = pairs(self.root, "reason")
        if reason is False:
            for key, value in found:
                end = self._next_line(max(content_end(value, self.y), key.end_mark.index))
                self.edits.append((self._line_start(key.start_mark.index), end, ""))
        elif reason is not None and found:
            self._replace_value(found[-1][1], scalar(reason))
        elif reason is not None:
            self.edits.append((anchor, anchor, f"{self.indent}reason: {scalar(reason)}{self.nl}"))

    def set_last_run(self, run: dict[str, Any]) -> None:
        """Make `last_run:` one line where it stands, or add it at the end of the front matter.

        One line — a flow mapping, `last_run: {id: …, result: done, …}` — because the card's own
        text is what a reader opens it for, and a record of ten block lines stood above it. A
        block record written before becomes that line; a comment on the key's line stays. The
        whole old record goes, keys a user added to it included: it described another run,
        whose record is in git. A value that is not a mapping (hand-edited) is replaced too."""
        flow = "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in run_entry(run)) + "}"
        found = pairs(self.root, "last_run")
        if not found:
            self.edits.append((len(self.y), len(self.y), f"{self.indent}last_run: {flow}{self.nl}"))
            return
        key, value = found[-1]
        if isinstance(value, MappingNode | SequenceNode) and not value.flow_style:
            start = self._line_start(value.start_mark.index)
            if start <= key.start_mark.index:  # `last_run: - a` cannot be; stay safe anyway
                raise ValueError("the card's 'last_run' cannot be replaced where it stands")
            self.edits.append((start, self._next_line(content_end(value, self.y)), ""))
            colon = self.y.index(":", key.end_mark.index) + 1
            self.edits.append((colon, colon, f" {flow}"))
        else:  # flow, a scalar, or empty: `_replace_value` puts one space after the colon
            self._replace_value(value, flow)

    def apply(self) -> str:
        """The YAML text with every edit made (later edits at the same offset land after)."""
        y = self.y
        order = sorted(range(len(self.edits)), key=lambda i: (self.edits[i][0], i), reverse=True)
        for i in order:
            start, end, new = self.edits[i]
            y = y[:start] + new + y[end:]
        return y


def _check(
    new_text: str,
    old: dict[Any, Any],
    target: tuple[str, str | None],
    reason: str | Literal[False] | None,
    run: dict[str, Any] | None,
) -> None:
    """Refuse a write-back that does not read back as intended (better than a damaged card)."""
    front = find_front_matter(new_text)
    try:
        data = compose(front.yaml_text(new_text))[1] if not isinstance(front, str) else None
    except (yaml.YAMLError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ValueError("cannot update this card's front matter without breaking it")
    key, state = target
    changed = (key, "reason", "last_run") if run is not None else (key, "reason")
    expected = {k: v for k, v in old.items() if k not in changed}
    try:
        problems = [k for k in expected if normalized(data.get(k)) != normalized(expected[k])]
    except RecursionError:  # absurdly deep nesting cannot be compared, so it is not rewritten
        raise ValueError("cannot update this card: its front matter is nested too deeply") from None
    if state is not None and data.get(key) != state:
        problems.append(key)
    if (reason is False and "reason" in data) or (
        isinstance(reason, str) and data.get("reason") != reason
    ):
        problems.append("reason")
    if run is not None and normalized(data.get("last_run")) != normalized(dict(run_entry(run))):
        problems.append("last_run")
    if problems:
        raise ValueError(f"cannot update this card without changing {', '.join(problems)}")


def card_edits(
    old_text: str, new_text: str, *, position_encoding: str = "utf-16"
) -> list[tuple[int, int, int, int, str]]:
    """The line-range replacements turning `old_text` into `new_text`, as LSP TextEdit fields.

    Returns `(start_line, start_char, end_line, end_char, replacement)` for each changed block of
    lines, in document order and not overlapping, all relative to `old_text` (as one
    `workspace/applyEdit` wants them); `[]` if the texts are equal. Characters count in
    `position_encoding` units ("utf-16" is the LSP default; also "utf-8" and "utf-32"); only an
    edit reaching the end of a last line without a line break has a character other than 0.
    """
    old, new = split_lines(old_text), split_lines(new_text)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        end_line, end_char = i2, 0
        if i2 == len(old) and old and not old[-1].endswith(("\n", "\r")):
            end_line, end_char = i2 - 1, _units(old[-1], position_encoding)
        edits.append((i1, 0, end_line, end_char, "".join(new[j1:j2])))
    return edits


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text)
