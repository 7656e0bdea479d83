"""The geometry of a card file (lines, front matter, YAML with positions), and its parse cache.

The parser needs to say on which line a problem is and the writer needs to know which characters
hold a value, so both work from the same primitives: lines counted the way editors count them
(only `\\r\\n`, `\\r` and `\\n` end a line, unlike YAML, which also breaks at U+2028), offsets
mapped through PyYAML node marks, and a renderer for YAML scalars that always reads back as the
value it was given. YAML is scanned by libyaml where PyYAML has it (six times faster on a card's
front matter) and composed in Python, where the bounds against hostile YAML are enforced.

Any other YAML (a Backlog.md `config.yml`, an imported card's `source:`) is a repository's too:
it goes through the same bounded composer (`load_yaml`), and nothing calls `yaml.safe_load`.

Parses are asked for again and again, so they are kept in a small bounded cache keyed by the
exact text (`TextCache`). The language server parses a card for every code lens, hover,
diagnostic pass, board refresh and file-watcher event, and a write-back parses the text it
starts from (usually just loaded) and the text it produced (read again by whoever wrote it and
by the watcher). The text is the whole key: the same characters always parse to the same
result, so nothing ever has to be invalidated. Bounded twice, by entries and by the characters
the keys hold, so a burst of huge cards cannot grow the process; and locked, because write-backs
run in worker threads.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Generic, Literal, TypeVar

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

CARD_STATES = ("New", "In Work", "Review", "Done", "Failed")
"""The states a card may be in, in board order."""

CARD_KEYS = (
    *("title", "state", "category", "reason", "source", "last_run", "runs"),
    *("model", "effort", "max_rounds", "max_cost_usd", "max_tokens", "package", "depends_on"),
)
"""The front-matter keys a card may have; any other key is a typo or unused (a warning)."""


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_DELIMITER = re.compile(r"(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n)?")
_PLAIN = re.compile(r"[\w./](?:[\w./+ -]*[\w./+-])?")
_NEEDS_ESCAPE = re.compile(
    '[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|["\\\\]'
)
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
RUN_KEYS = (
    "id",
    "started",
    "result",
    "reason",
    "rounds",
    "tokens",
    "cost_usd",
    "commit",
    "branch",
    "log",
    "outcome",
    "evidence",
)
"""The order in which a run record's keys are written; other keys follow in their own order."""


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


MAX_FRONT_MATTER_CHARS = 256_000
MAX_ALIASES = 100
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 100_000
"""A card's front matter is a dozen keys; these bounds stop a hostile one (a 600-byte alias bomb
expands to millions of nodes) long before it costs time or memory, in every path that parses."""


class CardLimitError(yaml.MarkedYAMLError):
    """The front matter (or other YAML: `load_yaml`) exceeds a bound; the mark says where."""


class _Bounds:
    """Counts aliases, nesting and the expanded size while composing, for either loader below.

    The check sits in `compose_node`, the Python composer's one entry per node, so it holds for
    events from the C parser too. Each node's expanded size is known once its children are
    composed (an alias returns an already composed node), so it needs no second walk."""

    def _start_bounds(self) -> None:
        self._aliases = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}

    def _limit(self, what: str, mark: Any) -> CardLimitError:
        return CardLimitError(problem=f"{what}; the front matter is refused", problem_mark=mark)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise self._limit(f"more than {MAX_ALIASES} aliases", event.start_mark)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._limit(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        try:
            node: Node | None = super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1
        if node is not None and id(node) not in self._sizes:
            self._sizes[id(node)] = self._size(node)
            if self._sizes[id(node)] > MAX_EXPANDED_NODES:
                what = f"its aliases expand to more than {MAX_EXPANDED_NODES:,} values"
                raise self._limit(what, node.start_mark)
        return node

    def _size(self, node: Node) -> int:
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        return 1 + sum(self._sizes.get(id(child), 1) for child in children)


class _PythonLoader(_Bounds, yaml.SafeLoader):
    """The pure-Python SafeLoader, bounded: the reference, and the one whose errors we show."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._start_bounds()


def _c_loader() -> type | None:
    """The loader below, or None where PyYAML was built without libyaml."""
    try:
        from yaml._yaml import CParser
    except ImportError:  # the pure loader does it all
        return None

    class _BoundedCLoader(_Bounds, Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml's scanner and parser (most of the pure loader's time) under the Python
        composer and SafeConstructor, so the bounds above still see every node. Marks count
        characters like the pure loader's; they carry no buffer, so nothing may rely on one."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_bounds()

    return _BoundedCLoader


_CLoader = _c_loader()


def _compose_with(loader_class: type, yaml_text: str) -> tuple[Node | None, Any]:
    loader = loader_class(yaml_text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


_PURE_ONLY = re.compile("[\ufeff\t]")
"""Where libyaml and the pure loader disagree on text both accept (a byte-order mark inside
the stream, tabs near indentation: found by `test_libyaml_composes_what_the_pure_loader_composes`),
the pure loader reads it: a card must mean the same with or without libyaml."""


def _compose_uncached(yaml_text: str) -> tuple[Node | None, Any]:
    if _CLoader is not None and not _PURE_ONLY.search(yaml_text):
        try:
            return _compose_with(_CLoader, yaml_text)
        except CardLimitError:
            raise
        except Exception:  # libyaml words errors (and a few edge cases) its own way:
            pass  # the pure loader decides, so a card reads the same with or without libyaml
    return _compose_with(_PythonLoader, yaml_text)


V = TypeVar("V")


class TextCache(Generic[V]):
    """Least-recently-used results of one function of a text; `misses` counts real work."""

    def __init__(self, max_entries: int, max_chars: int) -> None:
        self.max_entries, self.max_chars = max_entries, max_chars
        self._items: OrderedDict[str, V] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str, compute: Callable[[str], V]) -> V:
        """`compute(text)`, from the cache when this exact text was computed before.

        An exception from `compute` passes through and nothing is stored. `compute` runs outside
        the lock: two threads asking for the same new text may both compute it, which is cheaper
        than serialising every parse."""
        with self._lock:
            if text in self._items:
                self._items.move_to_end(text)
                self.hits += 1
                return self._items[text]
            self.misses += 1
        value = compute(text)
        if len(text) > self.max_chars:
            return value  # would evict everything else and still not fit
        with self._lock:
            if text not in self._items:
                self._items[text] = value
                self._chars += len(text)
            while len(self._items) > self.max_entries or self._chars > self.max_chars:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


_COMPOSED: TextCache[tuple[Node | None, Any]] = TextCache(max_entries=128, max_chars=2_000_000)
"""Front matters composed lately; a node tree is a few KB for a card that keeps one run."""


def compose(yaml_text: str) -> tuple[Node | None, Any]:
    """Parse YAML keeping the node tree (for positions) and the plain data; raises YAMLError.

    Bounded: size, aliases, nesting and the expanded size are checked before any data is built,
    so a hostile card fails fast with a `CardLimitError` instead of hanging a write-back. The
    same text is composed once (`_COMPOSED`): the result is shared, so callers only read it.
    """
    if len(yaml_text) > MAX_FRONT_MATTER_CHARS:
        mark = yaml.Mark("<card>", MAX_FRONT_MATTER_CHARS, 0, 0, "", 0)
        raise CardLimitError(
            problem=f"longer than {MAX_FRONT_MATTER_CHARS:,} characters", problem_mark=mark
        )
    return _COMPOSED.get(yaml_text, _compose_uncached)


def load_yaml(text: str, name: str, max_chars: int = MAX_FRONT_MATTER_CHARS) -> Any:
    """The data of a YAML document from a repository (`name`: its file, for the problem), under
    the front matter's bounds; raises YAMLError (`CardLimitError` when a bound is hit). Not
    cached: such files are read once per change of their stat, not on every keystroke."""
    if len(text) > max_chars:
        raise CardLimitError(problem=f"{name} is longer than {max_chars:,} characters")
    try:
        return _compose_uncached(text)[1]
    except CardLimitError as error:  # said again of the file (the C parser's marks are frozen)
        at, problem = error.problem_mark, (error.problem or "").replace("the front matter", name)
        where = yaml.Mark(name, at.index, at.line, at.column, "", 0) if at is not None else None
        raise CardLimitError(problem=problem, problem_mark=where) from error
    except RecursionError as error:
        raise CardLimitError(problem="nested too deeply", problem_mark=None) from error


def pairs(node: MappingNode, key: str) -> list[tuple[ScalarNode, Node]]:
    """Every `key:` entry of a mapping node, in file order (YAML keeps the last duplicate)."""
    return [(k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == key]


def content_end(node: Node, text: str) -> int:
    """Offset just past the last character that belongs to a node (block ends include no gap).

    `text` is the YAML the node was composed from (the C parser's marks carry no buffer)."""
    if isinstance(node, ScalarNode) and node.style in ("|", ">"):
        end = int(node.end_mark.index)
        while end > node.start_mark.index and text[end - 1] in " \t\r\n\x85\u2028\u2029":
            end -= 1
        return end  # a block scalar's end mark lies after the blank lines that follow it
    if isinstance(node, ScalarNode) or getattr(node, "flow_style", False):
        return int(node.end_mark.index)
    if isinstance(node, MappingNode) and node.value:
        return max(content_end(node.value[-1][0], text), content_end(node.value[-1][1], text))
    if isinstance(node, SequenceNode) and node.value:
        return content_end(node.value[-1], text)
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
        return bool(_compose_uncached(text)[1] == text)  # not cached: a value is no card
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
    """The keys of a run record in the order they are written; None values are left out."""
    keys = [k for k in RUN_KEYS if k in run] + [k for k in run if k not in RUN_KEYS]
    return [(str(k), run[k]) for k in keys if run[k] is not None]
