"""Backlog.md boards as cards: the project's statuses, its Definition of Done, a run's result.

A Backlog.md project keeps its tasks as Markdown in `backlog/tasks/`, next to a `config.yml`
that lists the project's own statuses (first is where a task starts, last is done) and an
optional `definition_of_done` every task must also meet. cardrunner runs such a task as it is,
so a task's `status:` is read through that list into one of `CARD_STATES`, and a run writes
its state back as one of the project's statuses — never as a `state:` key Backlog.md would not
show. The list is read from the project the card's path is in, and cached by the config file's
identity, so the parser (called on every keystroke) costs one `stat` here. The file is the
repository's, so it is read through the bounded YAML loader (`text.load_yaml`): a config that
exceeds a bound, or is not YAML, gives a `Board` with a `problem` naming the file, which every
task of the board reports (`cardrunner check`, the editor's diagnostics) — promptly.

A run's result goes into the task in Backlog.md's own format: ticked criteria and an
implementation note. The `backlog` CLI and its web board show a task's progress from its body —
`- [x] #1 …` items between the `<!-- AC:BEGIN -->` markers (and the Definition of Done's), and
the `## Implementation Notes` section between `<!-- SECTION:NOTES:BEGIN/END -->` — so that is
where a run's verdict goes, written the way `backlog task edit --check-ac … --append-notes …`
writes it. Only the lines concerned change: a verified criterion's box, the run's own paragraph
in the notes (a later run replaces it; the user's paragraphs stay), and the project's Definition
of Done, which a task without it gets as the section Backlog.md would have written at
`task create`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cardrunner.card.body import parse_body
from cardrunner.card.text import find_front_matter, load_yaml, split_lines
from cardrunner.config.paths import BACKLOG_CONFIG
from cardrunner.config.readfile import read_regular

BACKLOG_KEYS = (
    "id",
    "status",
    "assignee",
    "reporter",
    "created_date",
    "updated_date",
    "date",
    "labels",
    "tags",
    "milestone",
    "dependencies",
    "references",
    "documentation",
    "parent_task_id",
    "subtasks",
    "priority",
    "ordinal",
    "onStatusChange",
    "type",
    "project",
    "due_date",
    "modified_files",
)
"""The front-matter keys Backlog.md itself reads (its task parser): known, kept byte for byte."""

DEFAULT_STATUSES = ("To Do", "In Progress", "Done")
"""Backlog.md's own default list, for a task outside a project (say, copied into `cards/`)."""

_ACTIVE = ("progress", "doing", "work", "active", "started", "wip")
_REVIEW = ("review",)
_FAILED = ("fail", "block", "stuck")
MAX_CONFIG_BYTES = 256_000


@dataclass(frozen=True)
class Board:
    """What a Backlog.md project says about every task in it."""

    statuses: tuple[str, ...] = DEFAULT_STATUSES
    definition_of_done: tuple[str, ...] = ()
    problem: str | None = None
    """Why the project's `config.yml` was refused (its tasks are errors that say so)."""


def _like(status: str, words: Sequence[str]) -> bool:
    low = status.lower()
    return any(word in low for word in words)


def state_of(status: str, statuses: Sequence[str]) -> str | None:
    """The card state a task's status means, or None when the project has no such status.

    First is New and last is Done; in between a "Review"-like status is Review, a
    "Failed"/"Blocked"-like one Failed, and any other (In Progress, Doing…) In Work. Statuses
    compare as Backlog.md compares them, ignoring case."""
    names = [s.strip().lower() for s in statuses]
    low = status.strip().lower()
    if not names or low not in names:
        return None
    if low == names[0]:
        return "New"
    if low == names[-1]:
        return "Done"
    if _like(low, _REVIEW):
        return "Review"
    return "Failed" if _like(low, _FAILED) else "In Work"


def status_of(state: str, statuses: Sequence[str]) -> str:
    """The project's status for a card state: the inverse of `state_of` where there is one.

    A project without a Failed status gets a failed card back in its first status (To Do: to be
    run again, its `reason:` and notes say why) rather than "In Progress", which would read as a
    run still going on; one without a Review status keeps a verified but uncommitted card in its
    "In Progress"-like status (or its first one)."""
    middle = list(statuses[1:-1])
    active = next((s for s in middle if _like(s, _ACTIVE)), None)
    active = active or next((s for s in middle if state_of(s, statuses) == "In Work"), None)
    wanted = {"Review": _REVIEW, "Failed": _FAILED}.get(state)
    if state == "New":
        return statuses[0]
    if state == "Done":
        return statuses[-1]
    if wanted:
        found = next((s for s in middle if _like(s, wanted)), None)
        if found or state == "Failed":
            return found or statuses[0]
    return active or statuses[0]


def project_of(card_path: Path) -> Path | None:
    """The Backlog.md project folder a task file is in (`…/backlog` for `backlog/tasks/x.md`)."""
    folder = card_path.parent
    if folder.name != "tasks":
        return None
    project = folder.parent
    return project if (project / Path(BACKLOG_CONFIG).name).is_file() else None


class _Boards:
    """Boards read lately, by config path, valid while the file's stat is the same."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Path, tuple[tuple[int, int, int], Board]] = {}

    def get(self, config: Path) -> Board:
        try:
            info = config.stat()
        except OSError:
            return Board()
        key = (info.st_ino, info.st_mtime_ns, info.st_size)
        with self._lock:
            found = self._items.get(config)
        if found is not None and found[0] == key:
            return found[1]
        board = read_board(config)
        with self._lock:
            if len(self._items) > 64:
                self._items.clear()
            self._items[config] = (key, board)
        return board


_BOARDS = _Boards()


def board_of(card_path: Path) -> Board | None:
    """The board of the Backlog.md project `card_path` is a task of, or None."""
    project = project_of(card_path)
    return _BOARDS.get(project / Path(BACKLOG_CONFIG).name) if project is not None else None


def read_board(config: Path) -> Board:
    """A project's `config.yml` as a Board; a file that cannot be read falls back to the
    defaults, one that is too large, not YAML, or over the YAML bounds is a problem."""
    try:
        raw = read_regular(config, MAX_CONFIG_BYTES)
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            return Board()
        return Board(problem=f"{config}: cannot be read ({error}); its tasks are refused")
    try:
        data = load_yaml(raw.decode("utf-8"), str(config))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        why = " ".join(str(error).split())
        return Board(problem=f"{config}: {why}; its tasks are refused")
    if not isinstance(data, dict):
        return Board()
    statuses = _texts(data.get("statuses")) or DEFAULT_STATUSES
    return Board(statuses, _texts(data.get("definition_of_done")))


def _texts(value: object) -> tuple[str, ...]:
    """The strings of a list (a status is a name, never a nested structure to print)."""
    if not isinstance(value, list):
        return ()
    items = (str(item).strip() for item in value if isinstance(item, str | int | float))
    return tuple(item for item in items if item)


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
