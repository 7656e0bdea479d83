"""The card file as text: find the front matter, and write values back without touching the rest.

A card belongs to its user: it sits in their repository, in their diffs, with their comments and
their line endings. So the runner never re-serialises a card. `update_card_text` edits character
ranges found from PyYAML's node positions — the value of `state:`, a `reason:` line, the end of
the `runs:` list — and then checks its own output by parsing it again, so a card it cannot edit
safely raises `ValueError` instead of being damaged. `card_edits` turns such a change into the
line-range edit an editor applies with `workspace/applyEdit`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_DELIMITER = re.compile(r"(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n)?")
_PLAIN = re.compile(r"[\w./](?:[\w./+ -]*[\w./+-])?")
_NEEDS_ESCAPE = re.compile(
    '[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|["\\\\]'
)
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
RUN_KEYS = ("id", "started", "result", "reason", "rounds", "tokens", "cost_usd", "commit", "log")
"""The order in which a `runs:` entry's keys are written; other keys follow in their own order."""


def split_lines(text: str) -> list[str]:
    """Lines with their endings, as an editor counts them (`\\r\\n`, `\\r` and `\\n` only)."""
    return _LINE.findall(text)


def line_starts(text: str) -> list[int]:
    """The offset at which each line starts; the list has one entry per editor line."""
    starts = [0]
    for match in _LINE.finditer(text):
        if match.group().endswith(("\n", "\r")):
            starts.append(match.end())
    return starts


@dataclass(frozen=True)
class FrontMatter:
    """Where the front matter sits: its delimiter lines and the YAML text between them."""

    close_line: int
    start: int
    end: int
    newline: str

    def yaml_text(self, text: str) -> str:
        """The YAML between the delimiters, offsets matching `text[start:end]`."""
        return text[self.start : self.end]


def find_front_matter(text: str) -> FrontMatter | Literal["missing", "unterminated"]:
    """Locate the `---` … `---` block at the top of a card (a UTF-8 BOM before it is allowed)."""
    lines = split_lines(text)
    first = lines[0].removeprefix("\ufeff") if lines else ""
    if not _DELIMITER.fullmatch(first) or not first.startswith("---"):
        return "missing"
    newline = first[len(first.rstrip("\r\n")) :]
    if not newline:
        return "unterminated"
    offset = len(lines[0])
    for number, line in enumerate(lines[1:], start=1):
        if _DELIMITER.fullmatch(line):
            return FrontMatter(number, len(lines[0]), offset, newline)
        offset += len(line)
    return "unterminated"


def compose(yaml_text: str) -> tuple[Node | None, Any]:
    """Parse YAML keeping the node tree (for positions) and the plain data; raises YAMLError."""
    loader = yaml.SafeLoader(yaml_text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def pairs(node: MappingNode, key: str) -> list[tuple[ScalarNode, Node]]:
    """Every `key:` entry of a mapping node, in file order (YAML keeps the last duplicate)."""
    return [(k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == key]


def content_end(node: Node) -> int:
    """Offset just past the last character that belongs to a node (block ends include no gap)."""
    if isinstance(node, ScalarNode) and node.style in ("|", ">") and node.end_mark.buffer:
        end, buffer = int(node.end_mark.index), node.end_mark.buffer
        while end > node.start_mark.index and buffer[end - 1] in " \t\r\n\x85\u2028\u2029":
            end -= 1
        return end  # a block scalar's end mark lies after the blank lines that follow it
    if isinstance(node, ScalarNode) or getattr(node, "flow_style", False):
        return int(node.end_mark.index)
    if isinstance(node, MappingNode) and node.value:
        return max(content_end(node.value[-1][0]), content_end(node.value[-1][1]))
    if isinstance(node, SequenceNode) and node.value:
        return content_end(node.value[-1])
    return int(node.end_mark.index)


def scalar(value: Any) -> str:
    """A YAML flow value that `yaml.safe_load` reads back as `value` (strings stay strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        return text if "." in text else text.replace("e", ".0e", 1)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(scalar(item) for item in value) + "]"
    text = value.isoformat() if isinstance(value, date | datetime) else str(value)
    if _PLAIN.fullmatch(text) and "  " not in text and _reads_back(text):
        return text
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _reads_back(text: str) -> bool:
    try:
        return bool(yaml.safe_load(text) == text)
    except yaml.YAMLError:  # "..." ends a document
        return False


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def normalized(value: Any) -> Any:
    """What `scalar(value)` reads back as, for checking a write-back (NaN compares equal)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {str(k): normalized(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalized(item) for item in value]
    if isinstance(value, date | datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def run_entry(run: dict[str, Any]) -> list[tuple[str, Any]]:
    """The keys of a `runs:` entry in the order they are written; None values are left out."""
    keys = [k for k in RUN_KEYS if k in run] + [k for k in run if k not in RUN_KEYS]
    return [(str(k), run[k]) for k in keys if run[k] is not None]


def card_edits(
    old_text: str, new_text: str, *, position_encoding: str = "utf-16"
) -> list[tuple[int, int, int, int, str]]:
    """The line-range replacement turning `old_text` into `new_text`, as LSP TextEdit fields.

    Returns `[(start_line, start_char, end_line, end_char, replacement)]`, or `[]` if the texts
    are equal. Characters count in `position_encoding` units ("utf-16" is the LSP default; also
    "utf-8" and "utf-32"); only an edit reaching the end of a last line without a line break has
    a character other than 0.
    """
    if old_text == new_text:
        return []
    old, new = split_lines(old_text), split_lines(new_text)
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    replacement = "".join(new[prefix : len(new) - suffix])
    end_line, end_char = len(old) - suffix, 0
    if suffix == 0 and old and not old[-1].endswith(("\n", "\r")):
        end_line, end_char = len(old) - 1, _units(old[-1], position_encoding)
    return [(prefix, 0, end_line, end_char, replacement)]


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text)


CARD_STATES = ("New", "In Work", "Review", "Done", "Failed")
"""The states a card may be in, in board order."""


def update_card_text(
    text: str,
    *,
    state: str | None = None,
    reason: str | Literal[False] | None = None,
    run: dict[str, Any] | None = None,
) -> str:
    """Set `state`, set (or with False remove) `reason`, append `run` to `runs:`; nothing else.

    Only the targeted values and lines change: comments, spacing, key order, line endings, the
    body and a missing final newline all stay. New keys go after `state` (`reason`) or at the end
    of the front matter (`runs`). None values in `run` are left out. Raises ValueError if the
    front matter is missing or broken, `runs` is not a list, or the result would not read back.
    """
    if state is not None and state not in CARD_STATES:
        raise ValueError(f"unknown state {state!r} (expected one of {', '.join(CARD_STATES)})")
    front = find_front_matter(text)
    if isinstance(front, str):
        raise ValueError(f"the card's front matter is {front}")
    y = front.yaml_text(text)
    try:
        root, data = compose(y)
    except yaml.YAMLError as error:
        raise ValueError(f"the card's front matter is not valid YAML: {error}") from error
    if root is None:
        root, data = MappingNode("tag:yaml.org,2002:map", []), {}
    if not isinstance(root, MappingNode) or root.flow_style or not isinstance(data, dict):
        raise ValueError("the card's front matter must be a block-style mapping to be updated")
    edits = _Edits(y, root, front.newline)
    anchor = edits.set_state(state)
    edits.set_reason(reason, anchor)
    if run is not None:
        edits.append_run(run)
    new_text = text[: front.start] + edits.apply() + text[front.end :]
    _check(new_text, data, state, reason, run)
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
        match = re.compile(r"\r\n|\r|\n").search(self.y, offset)
        return match.end() if match else len(self.y)

    def _replace_value(self, value: Node, new: str) -> None:
        start = value.start_mark.index
        if isinstance(value, ScalarNode) and start == value.end_mark.index:
            self.edits.append((start, start, " " + new))
            return
        end = content_end(value)
        while end > start and self.y[end - 1] in " \t\r\n":
            end -= 1
        self.edits.append((start, end, new))

    def set_state(self, state: str | None) -> int:
        """Replace the state's value (or add the key); returns where a new `reason:` goes."""
        found = pairs(self.root, "state")
        if found:
            anchor = self._next_line(content_end(found[-1][1]))
        else:
            title = pairs(self.root, "title")
            anchor = self._next_line(content_end(title[-1][1])) if title else 0
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
                end = self._next_line(max(content_end(value), key.end_mark.index))
                self.edits.append((self._line_start(key.start_mark.index), end, ""))
        elif reason is not None and found:
            self._replace_value(found[-1][1], scalar(reason))
        elif reason is not None:
            self.edits.append((anchor, anchor, f"{self.indent}reason: {scalar(reason)}{self.nl}"))

    def append_run(self, run: dict[str, Any]) -> None:
        """Append an entry to `runs:` in the list's own style, creating a block list if needed."""
        entry = run_entry(run)
        found = pairs(self.root, "runs")
        if not found:
            block = self._block(entry, self.indent + "  ")
            self.edits.append((len(self.y), len(self.y), f"{self.indent}runs:{self.nl}{block}"))
            return
        key, value = found[-1]
        if isinstance(value, SequenceNode) and value.flow_style:
            end = value.end_mark.index - 1
            flow = "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in entry) + "}"
            self.edits.append((end, end, (", " if value.value else "") + flow))
        elif isinstance(value, SequenceNode):
            column = value.start_mark.index - self._line_start(value.start_mark.index)
            at = self._next_line(content_end(value))
            self.edits.append((at, at, self._block(entry, " " * column)))
        elif isinstance(value, ScalarNode) and value.tag == "tag:yaml.org,2002:null":
            start, end = value.start_mark.index, value.end_mark.index
            while start > key.end_mark.index and self.y[start - 1] in " \t":
                start -= 1
            self.edits.append((start, end, ""))
            at = self._next_line(end)
            key_indent = self.y[self._line_start(key.start_mark.index) : key.start_mark.index]
            self.edits.append((at, at, self._block(entry, key_indent + "  ")))
        else:
            raise ValueError("the card's 'runs' is not a list, so a run cannot be added to it")

    def _block(self, entry: list[tuple[str, Any]], indent: str) -> str:
        if not entry:
            return f"{indent}- {{}}{self.nl}"
        return "".join(
            f"{indent}{'  ' if i else '- '}{scalar(k)}: {scalar(v)}{self.nl}"
            for i, (k, v) in enumerate(entry)
        )

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
    state: str | None,
    reason: str | Literal[False] | None,
    run: dict[str, Any] | None,
) -> None:
    """Refuse a write-back that does not read back as intended (better than a damaged card)."""
    front = find_front_matter(new_text)
    try:
        data = compose(front.yaml_text(new_text))[1] if not isinstance(front, str) else None
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise ValueError("cannot update this card's front matter without breaking it")
    expected = {k: v for k, v in old.items() if k not in ("state", "reason", "runs")}
    problems = [k for k in expected if normalized(data.get(k)) != normalized(expected[k])]
    if state is not None and data.get("state") != state:
        problems.append("state")
    if (reason is False and "reason" in data) or (
        isinstance(reason, str) and data.get("reason") != reason
    ):
        problems.append("reason")
    if run is not None:
        runs, before = data.get("runs"), old.get("runs")
        count = len(before) if isinstance(before, list) else 0
        want = normalized(dict(run_entry(run)))
        if not isinstance(runs, list) or len(runs) != count + 1 or normalized(runs[-1]) != want:
            problems.append("runs")
    if problems:
        raise ValueError(f"cannot update this card without changing {', '.join(problems)}")
