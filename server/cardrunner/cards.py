"""Cards: the Markdown files in `cards/` that say what to change and how to know it works.

A card is YAML front matter (title, state, category, later reason and runs) and a Markdown body
whose "Acceptance criteria" list becomes the numbered checklist the model must verify. The parser
never raises: the language server calls it on every keystroke and shows what it returns as
diagnostics, so every problem carries the line it is about. Writing back goes through
`cardfile.update_card_text`, which changes only the targeted values.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from cardrunner.cardbody import parse_body
from cardrunner.cardfile import (
    CARD_STATES,
    card_edits,
    compose,
    find_front_matter,
    line_starts,
    pairs,
    update_card_text,
)

__all__ = [
    "CARD_STATES",
    "Card",
    "CardError",
    "CardProblem",
    "card_edits",
    "find_cards",
    "load_card",
    "parse_card",
    "update_card_text",
    "write_card",
]


@dataclass(frozen=True)
class CardProblem:
    """Something wrong with a card, on a 0-based line (editors show it as a diagnostic)."""

    line: int
    message: str
    severity: Literal["error", "warning"] = "error"
    end_line: int | None = None


@dataclass(frozen=True)
class Card:
    """A parsed card; `criteria[i]` is criterion `i` for the `report_criterion` tool."""

    path: Path
    title: str
    state: str
    category: str | None
    description: str
    criteria: list[str]
    criteria_lines: list[int]
    title_line: int
    reason: str | None
    runs: list[dict[str, Any]]
    text: str

    @property
    def slug(self) -> str:
        """The file stem as lowercase ASCII words joined by dashes (for run ids and branches)."""
        ascii_stem = unicodedata.normalize("NFKD", self.path.stem).encode("ascii", "ignore")
        return re.sub(r"[^a-z0-9]+", "-", ascii_stem.decode().lower()).strip("-") or "card"

    def prompt(self) -> str:
        """The user message that hands this card to the model."""
        parts = [f"THE CARD\n--------\nTitle: {self.title}"]
        if self.category:
            parts[0] += f"\nCategory: {self.category}"
        if self.description:
            parts.append(self.description)
        numbered = "\n".join(f"{i}. {criterion}" for i, criterion in enumerate(self.criteria))
        parts.append(
            "Acceptance criteria (numbered from 0; pass that number as `index` to "
            f"report_criterion):\n{numbered}"
        )
        return "\n\n".join(parts) + "\n"


class CardError(Exception):
    """A card that cannot be used, with every problem found (str() reads like compiler output)."""

    def __init__(self, path: Path, problems: Iterable[CardProblem]) -> None:
        self.path, self.problems = path, list(problems)
        super().__init__(path, self.problems)

    def __str__(self) -> str:
        lines = [
            f"{self.path}:{p.line + 1}: {'warning: ' if p.severity == 'warning' else ''}{p.message}"
            for p in self.problems
        ]
        return "\n".join(lines) or f"{self.path}: not a valid card"


def parse_card(text: str, path: Path) -> tuple[Card | None, list[CardProblem]]:
    """Parse a card; never raises. With any error the card is None; warnings come with a card."""
    try:
        return _Parser(text).parse(path)
    except Exception as error:  # a parser bug must not take the language server down
        return None, [CardProblem(0, f"cannot read this card ({type(error).__name__}: {error})")]


class _Parser:
    """One parse of one card text, collecting problems as it goes."""

    def __init__(self, text: str) -> None:
        self.text, self.starts = text, line_starts(text)
        self.problems: list[CardProblem] = []

    def line(self, offset: int) -> int:
        return min(max(bisect_right(self.starts, offset) - 1, 0), len(self.starts) - 1)

    def problem(
        self, line: int, message: str, severity: Literal["error", "warning"] = "error"
    ) -> None:
        self.problems.append(CardProblem(line, message, severity))

    def parse(self, path: Path) -> tuple[Card | None, list[CardProblem]]:
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
        card = Card(
            path=path,
            text=self.text,
            description=body.description,
            criteria=body.criteria,
            criteria_lines=body.criteria_lines,
            **fields,
        )
        return card, self.problems

    def front_matter(self, y: str, start: int, close_line: int) -> dict[str, Any] | None:
        """The card fields from the YAML, or None when it cannot be read as a mapping."""
        try:
            root, data = compose(y)
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

        def where(name: str, value: bool = False) -> int:
            found = pairs(root, name)
            node = found[-1][1 if value else 0] if found else None
            return self.line(start + node.start_mark.index) if node else 0

        title = self.text_value(data, root, "title", where("title"), "error")
        if "title" not in data:
            self.problem(0, "missing title: add a line 'title: …' to the front matter")
        elif data["title"] is None or (title is not None and not title.strip()):
            self.problem(where("title"), "the title is empty")
        state = "New" if "state" not in data else self.text_value(data, root, "state", 0, None)
        if state not in CARD_STATES:
            allowed = ", ".join(CARD_STATES)
            if state is None:
                what = "the state is empty" if data["state"] is None else "the state is not text"
            else:
                what = f"unknown state {state!r}"
            self.problem(where("state", True), f"{what} (expected one of {allowed})")
        return {
            "title": (title or "").strip(),
            "state": state,
            "category": self.text_value(data, root, "category", where("category"), "warning"),
            "reason": self.text_value(data, root, "reason", where("reason"), "warning"),
            "title_line": where("title"),
            "runs": self.runs(root, data, start),
        }

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

    def runs(self, root: MappingNode, data: dict[Any, Any], start: int) -> list[dict[str, Any]]:
        """The recorded runs; anything that is not a list of mappings is a warning and ignored."""
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


def load_card(path: Path) -> Card:
    """Read and parse a card; raises CardError (with every problem) if it cannot be used."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CardError(path, [CardProblem(0, f"cannot read the card: {error}")]) from error
    card, problems = parse_card(text, path)
    if card is None:
        raise CardError(path, problems)
    return card


def write_card(
    path: Path,
    *,
    state: str | None = None,
    reason: str | Literal[False] | None = None,
    run: dict[str, Any] | None = None,
) -> Card:
    """Write state/reason/run back into a card file atomically and return the card as written.

    The file is replaced with a temporary file from the same folder (same mode), so a reader or
    a file watcher never sees half a card. Raises CardError without writing if the front matter
    cannot be updated, and after writing if the card has other errors (say, no criteria).
    """
    try:
        old = path.read_bytes().decode("utf-8")
        new = update_card_text(old, state=state, reason=reason, run=run)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CardError(path, [CardProblem(0, f"cannot update the card: {error}")]) from error
    if new != old:
        _replace_atomically(path, new.encode("utf-8"))
    card, problems = parse_card(new, path)
    if card is None:
        raise CardError(path, problems)
    return card


def _replace_atomically(path: Path, data: bytes) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def find_cards(root: Path, folder: str = "cards") -> list[Path]:
    """The Markdown files under `root/folder`, sorted; hidden files and editor droppings skipped."""
    base = root / folder
    found: list[Path] = []
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        for name in files:
            hidden = name.startswith((".", "#", "~")) or name.endswith(("~", "#"))
            if not hidden and name.lower().endswith((".md", ".markdown")):
                found.append(Path(directory) / name)
    return sorted(found)
