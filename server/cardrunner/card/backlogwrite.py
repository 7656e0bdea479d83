"""A run's result in a Backlog.md task's own format: ticked criteria and an implementation note.

The `backlog` CLI and its web board show a task's progress from its body — `- [x] #1 …` items
between the `<!-- AC:BEGIN -->` markers (and the Definition of Done's), and the
`## Implementation Notes` section between `<!-- SECTION:NOTES:BEGIN/END -->` — so that is where a
run's verdict goes, written the way `backlog task edit --check-ac … --append-notes …` writes it.
Only the lines concerned change: a verified criterion's box, the run's own paragraph in the notes
(a later run replaces it; the user's paragraphs stay), and the project's Definition of Done,
which a task without it gets as the section Backlog.md would have written at `task create`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cardrunner.card.backlog import Board
from cardrunner.card.body import parse_body
from cardrunner.card.text import find_front_matter, split_lines

_AC_END = re.compile(r" {0,3}<!--[ \t]*AC:END[ \t]*-->[ \t]*")
_DOD_BEGIN = re.compile(r" {0,3}<!--[ \t]*DOD:BEGIN[ \t]*-->[ \t]*")
_DOD_END = re.compile(r" {0,3}<!--[ \t]*DOD:END[ \t]*-->[ \t]*")
_NOTES_BEGIN = re.compile(r" {0,3}<!--[ \t]*SECTION:NOTES:BEGIN[ \t]*-->[ \t]*")
_NOTES_END = re.compile(r" {0,3}<!--[ \t]*SECTION:NOTES:END[ \t]*-->[ \t]*")
_SUMMARY = re.compile(r"## Final Summary[ \t]*", re.IGNORECASE)
_OPEN_BOX = re.compile(r"([ \t]*[-*+][ \t]+)\[ \]")
_ENTRY = re.compile(r"(\d+)(\.|:) (.*)", re.S)
"""A ledger line: `1. verified on …` (numbered for people), or `0: verified …` as older runs
wrote it (the model's index)."""
_OWN_PARAGRAPH = "cardrunner run "
"""How the run's paragraph in the notes starts: the one a later run replaces."""


def is_backlog_task(text: str) -> bool:
    """A card in Backlog.md's task format (its criteria between the AC markers)."""
    return "<!-- AC:BEGIN -->" in text


def write_result(text: str, run: dict[str, Any], board: Board | None, newline: str) -> str:
    """`text` with the run's verified criteria ticked, the project's missing Definition of Done
    added, and the run's paragraph in its implementation notes."""
    front = find_front_matter(text)
    if isinstance(front, str):
        return text
    lines = split_lines(text)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    body = parse_body(text, front.close_line + 1)
    have = {c.casefold() for c in body.criteria}
    extra = [
        d
        for d in dict.fromkeys(board.definition_of_done if board else ())
        if d.casefold() not in have
    ]
    criteria = body.criteria + extra
    verified = {i for i, rest in _entries(run) if rest.startswith("verified")}
    for index, number in enumerate(body.criteria_lines):
        if index in verified:
            lines[number] = _OPEN_BOX.sub(r"\1[x]", lines[number], count=1)
    ticks = [len(body.criteria) + i in verified for i in range(len(extra))]
    lines = _add_done_items(lines, extra, ticks, newline)
    lines = _put_note(lines, _paragraph(run, criteria), newline)
    return "".join(lines)


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _add_done_items(
    lines: list[str], items: Sequence[str], ticks: Sequence[bool], nl: str
) -> list[str]:
    """The project's Definition of Done items the task lacks, numbered on from its own."""
    if not items:
        return lines
    begin = next((i for i, line in enumerate(lines) if _DOD_BEGIN.fullmatch(_bare(line))), None)
    end = next((i for i, line in enumerate(lines) if _DOD_END.fullmatch(_bare(line))), None)
    if begin is not None and end is not None and begin < end:
        count = sum(1 for line in lines[begin + 1 : end] if _bare(line).lstrip().startswith("- "))
        new = [
            _item(count + k + 1, item, tick, nl)
            for k, (item, tick) in enumerate(zip(items, ticks, strict=True))
        ]
        return [*lines[:end], *new, *lines[end:]]
    after = next(
        (i + 1 for i, line in enumerate(lines) if _AC_END.fullmatch(_bare(line))), len(lines)
    )
    numbered = [
        _item(k + 1, item, tick, nl)
        for k, (item, tick) in enumerate(zip(items, ticks, strict=True))
    ]
    section = [
        nl,
        f"## Definition of Done{nl}",
        f"<!-- DOD:BEGIN -->{nl}",
        *numbered,
        f"<!-- DOD:END -->{nl}",
    ]
    return [*lines[:after], *section, *lines[after:]]


def _item(number: int, text: str, ticked: bool, nl: str) -> str:
    return f"- [{'x' if ticked else ' '}] #{number} {text}{nl}"


def _paragraph(run: dict[str, Any], criteria: Sequence[str]) -> list[str]:
    """The run's paragraph: its id and result, why it failed, and each criterion's evidence."""
    head = f"{_OWN_PARAGRAPH}{run.get('id', '?')}: {run.get('result', '?')}"
    if run.get("commit"):
        head += f" (commit {str(run['commit'])[:12]})"
    found = [head]
    if run.get("reason"):
        found.append(f"Reason: {' '.join(str(run['reason']).split())}")
    for index, rest in _entries(run):
        name = criteria[index] if 0 <= index < len(criteria) else f"criterion {index + 1}"
        found.append(f"- {name}: {' '.join(rest.split())}")
    return found


def _entries(run: dict[str, Any]) -> list[tuple[int, str]]:
    """(0-based criterion, the rest of its line) of each ledger line of the run."""
    out = []
    for entry in run.get("evidence") or []:
        if m := _ENTRY.match(str(entry)):
            number = int(m.group(1))
            out.append((number - 1 if m.group(2) == "." else number, m.group(3)))
    return out


def _put_note(lines: list[str], paragraph: list[str], nl: str) -> list[str]:
    """Replace the run's paragraph in the notes section (or add the section before the final
    summary, or at the end); the user's own paragraphs stay as they are."""
    begin = next((i for i, line in enumerate(lines) if _NOTES_BEGIN.fullmatch(_bare(line))), None)
    end = next((i for i, line in enumerate(lines) if _NOTES_END.fullmatch(_bare(line))), None)
    new = [f"{line}{nl}" for line in paragraph]
    if begin is None or end is None or end < begin:
        at = next(
            (i for i, line in enumerate(lines) if _SUMMARY.fullmatch(_bare(line))), len(lines)
        )
        gap = [nl] if at > 0 and _bare(lines[at - 1]).strip() else []
        section = [*gap, f"## Implementation Notes{nl}", nl, f"<!-- SECTION:NOTES:BEGIN -->{nl}"]
        tail = [f"<!-- SECTION:NOTES:END -->{nl}", *([nl] if at < len(lines) else [])]
        return [*lines[:at], *section, *new, *tail, *lines[at:]]
    kept = _without_own(lines[begin + 1 : end])
    if kept and _bare(kept[-1]).strip():
        kept.append(nl)
    return [*lines[: begin + 1], *kept, *new, *lines[end:]]


def _without_own(notes: list[str]) -> list[str]:
    """The notes' lines without the paragraph an earlier run wrote (and the blank after it)."""
    kept: list[str] = []
    skipping = False
    for line in notes:
        if not _bare(line).strip():
            if not skipping:
                kept.append(line)
            skipping = False
        elif skipping or (
            _bare(line).startswith(_OWN_PARAGRAPH) and (not kept or not _bare(kept[-1]).strip())
        ):
            skipping = True
        else:
            kept.append(line)
    while kept and not _bare(kept[-1]).strip():
        kept.pop()
    return kept
