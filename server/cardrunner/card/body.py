"""The Markdown body of a card: its description and its acceptance criteria, with their lines.

The criteria are what the run is judged by — the model reports on each by index and the editor
shows each one's status on its bullet — so this reads lists the way people write them: `-`, `*`,
`+`, `1.` and `1)` bullets, `[ ]` checkboxes, wrapped and lazily continued lines, nested details,
under an ATX heading, a setext heading, a bold line or a plain "Acceptance criteria:" line.
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

Severity = Literal["error", "warning"]


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
    heading = _find_heading(lines, first_line)
    if heading is None:
        at = min(first_line, len(lines) - 1)
        message = "no acceptance criteria: add '## Acceptance criteria' and a '- …' bullet for each"
        body.problems.append((at, message, "error"))
        used: set[int] = set()
    else:
        used = _read_criteria(lines, heading, body)
    kept = [line for i, line in enumerate(lines[first_line:], first_line) if i not in used]
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


def _is_criteria_title(title: str) -> bool:
    return " ".join(re.sub(r"[*_`:#]", " ", title).split()).lower() == "acceptance criteria"


def _find_heading(lines: list[str], start: int) -> int | None:
    """The line of the first "Acceptance criteria" heading outside code fences."""
    fenced = False
    for i in range(start, len(lines)):
        if _FENCE.match(lines[i]):
            fenced = not fenced
        elif not fenced:
            heading = _heading_title(lines, i)
            if _is_criteria_title(heading[0] if heading else lines[i]):
                return i
    return None


def _read_criteria(lines: list[str], heading: int, body: Body) -> set[int]:
    """Fill in the criteria below `heading`; returns the lines that belong to the section."""
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
        if bullet and (not body.criteria or indent < content_column):
            text = _CHECKBOX.sub("", (bullet.group(3) or "").strip(), count=1)
            body.criteria.append(text.strip())
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
        body.problems.append((heading, message, "error"))
    return used


def _drop_empty(body: Body) -> None:
    for line in [n for c, n in zip(body.criteria, body.criteria_lines, strict=True) if not c]:
        body.problems.append((line, "empty criterion (ignored)", "warning"))
    pairs = [(c, n) for c, n in zip(body.criteria, body.criteria_lines, strict=True) if c]
    body.criteria = [c for c, _ in pairs]
    body.criteria_lines = [n for _, n in pairs]
