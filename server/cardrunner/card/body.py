"""The Markdown body of a card: its description and its acceptance criteria, with their lines.

The criteria are what the run is judged by — the model reports on each by index and the editor
shows each one's status on its bullet — so this reads lists the way people write them: `-`, `*`,
`+`, `1.` and `1)` bullets, `[ ]` checkboxes, wrapped and lazily continued lines, nested details,
under an ATX heading, a setext heading, a bold line or a plain "Acceptance criteria:" line.

Backlog.md's task format reads too: its list sits between `<!-- AC:BEGIN -->` and
`<!-- AC:END -->` (an HTML comment ends a list, it never continues a criterion), its items are
numbered `- [ ] #1 …` (the number is Backlog.md's, not part of the criterion), and the items of
its "Definition of Done" section are criteria as well. Its section markers are not description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from cardrunner.card.text import split_lines

_ATX = re.compile(r" {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_BOLD = re.compile(r" {0,3}(\*\*|__)(.+?)\1[ \t]*:?[ \t]*")
_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*")
_BULLET = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|[ \t]*)")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_FENCE = re.compile(r" {0,3}(?:```|~~~)")
_CHECKBOX = re.compile(r"\[[ xX]\](?:[ \t]+|$)")
_NUMBER = re.compile(r"#\d{1,9}(?:[ \t]+|$)")
_COMMENT = re.compile(r" {0,3}<!--.*-->[ \t]*")
MARKER = re.compile(r" {0,3}<!--[ \t]*(?:SECTION:[A-Z_]+|AC|DOD):(?:BEGIN|END)[ \t]*-->[ \t]*")
"""A Backlog.md section marker line: structure, not text."""

Severity = Literal["error", "warning"]

_CODE_TAG = re.compile(r"^\(code\)\s+|\s*\(code\)[.!]?$", re.IGNORECASE)
"""`- The tests pass. (code)`: the card says a criterion is checked in the code, not the app."""


def code_level(criterion: str) -> bool:
    """True if the card marks `criterion` as code-level: `(code)` at its start or end.

    A run that can see a running app accepts evidence for its other criteria only from calls
    that observed the app (docs/cards.md, docs/verification.md)."""
    return _CODE_TAG.search(criterion.strip()) is not None


@dataclass
class Body:
    """What a card's body says; `problems` are (line, message, severity)."""

    description: str = ""
    criteria: list[str] = field(default_factory=list)
    criteria_lines: list[int] = field(default_factory=list)
    problems: list[tuple[int, str, Severity]] = field(default_factory=list)


def parse_body(text: str, first_line: int) -> Body:
    """Read the body starting at `first_line` (the line after the front matter)."""
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    if not text or text.endswith(("\n", "\r")):
        lines.append("")
    body = Body()
    heading = _find_heading(lines, first_line, "acceptance criteria")
    done = _find_heading(lines, first_line, "definition of done")
    used: set[int] = set()
    if heading is not None:
        used = _read_criteria(lines, heading, body, "error")
    if done is not None and done != heading:
        dod = Body()
        used |= _read_criteria(lines, done, dod, "warning")
        body.criteria += dod.criteria
        body.criteria_lines += dod.criteria_lines
        body.problems += dod.problems
    if heading is None and not body.criteria:
        at = min(first_line, len(lines) - 1)
        message = "no acceptance criteria: add '## Acceptance criteria' and a '- …' bullet for each"
        body.problems.append((at, message, "error"))
    kept = [
        line
        for i, line in enumerate(lines[first_line:], first_line)
        if i not in used and not MARKER.fullmatch(line)
    ]
    body.description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return body


def _heading_title(lines: list[str], i: int) -> tuple[str, int] | None:
    """The title of a heading on line `i` and how many lines it takes, or None."""
    line = lines[i]
    if match := _ATX.fullmatch(line):
        return match.group(1) or "", 1
    if match := _BOLD.fullmatch(line):
        return match.group(2), 1
    next_line = lines[i + 1] if i + 1 < len(lines) else ""
    plain = line.strip() and not _BULLET.fullmatch(line) and not _RULE.fullmatch(line)
    if plain and _UNDERLINE.fullmatch(next_line) and not line.startswith((" " * 4, "\t")):
        return line.strip(), 2
    return None


def _is_titled(title: str, wanted: str) -> bool:
    return " ".join(re.sub(r"[*_`:#]", " ", title).split()).lower() == wanted


def _find_heading(lines: list[str], start: int, wanted: str) -> int | None:
    """The line of the first heading titled `wanted` (lowercase) outside code fences."""
    fenced = False
    for i in range(start, len(lines)):
        if _FENCE.match(lines[i]):
            fenced = not fenced
        elif not fenced:
            heading = _heading_title(lines, i)
            if _is_titled(heading[0] if heading else lines[i], wanted):
                return i
    return None


def _criterion(item: str) -> str:
    """A bullet's text without its checkbox and, after one, Backlog.md's `#n` number."""
    box = _CHECKBOX.match(item)
    if box is None:
        return item
    rest = item[box.end() :]
    number = _NUMBER.match(rest)
    return (rest[number.end() :] if number else rest).strip()


def _read_criteria(lines: list[str], heading: int, body: Body, empty: Severity) -> set[int]:
    """Fill in the criteria below `heading`; returns the lines that belong to the section.

    `empty` is how bad a section without bullets is (the Definition of Done may be empty)."""
    title = _heading_title(lines, heading)
    used = set(range(heading, heading + (title[1] if title else 1)))
    content_column = 0
    blank_before = False
    for i in range(max(used) + 1, len(lines)):
        line = lines[i].expandtabs(4)
        bullet = None if _RULE.fullmatch(line) else _BULLET.fullmatch(line)
        indent = len(line) - len(line.lstrip())
        if _heading_title(lines, i) is not None:
            break
        if _COMMENT.fullmatch(line):
            if MARKER.fullmatch(line):
                used.add(i)
            if body.criteria:
                break  # `<!-- AC:END -->`, or any comment: the list has ended
            continue
        if bullet and (not body.criteria or indent < content_column):
            body.criteria.append(_criterion((bullet.group(3) or "").strip()))
            body.criteria_lines.append(i)
            content_column = bullet.start(3) if bullet.group(3) else bullet.end(2) + 1
        elif body.criteria and line.strip() and (indent >= content_column or not blank_before):
            body.criteria[-1] = f"{body.criteria[-1]} {line.strip()}".strip()
        elif body.criteria and line.strip():
            break
        elif line.strip():
            blank_before = False
            continue  # an introduction between the heading and the list stays in the description
        blank_before = not line.strip()
        if body.criteria and not blank_before:
            used.add(i)
    _drop_empty(body)
    if not body.criteria:
        message = "the acceptance criteria section has no bullets: list each criterion as '- …'"
        body.problems.append((heading, message, empty))
    return used


def _drop_empty(body: Body) -> None:
    for line in [n for c, n in zip(body.criteria, body.criteria_lines, strict=True) if not c]:
        body.problems.append((line, "empty criterion (ignored)", "warning"))
    pairs = [(c, n) for c, n in zip(body.criteria, body.criteria_lines, strict=True) if c]
    body.criteria = [c for c, _ in pairs]
    body.criteria_lines = [n for _, n in pairs]
