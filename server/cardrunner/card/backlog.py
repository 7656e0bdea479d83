"""Backlog.md boards as cards: the project's statuses and Definition of Done, and the mapping.

A Backlog.md project keeps its tasks as Markdown in `backlog/tasks/`, next to a `config.yml`
that lists the project's own statuses (first is where a task starts, last is done) and an
optional `definition_of_done` every task must also meet. cardrunner runs such a task as it is,
so a task's `status:` is read through that list into one of `CARD_STATES`, and a run writes
its state back as one of the project's statuses — never as a `state:` key Backlog.md would not
show. The list is read from the project the card's path is in, and cached by the config file's
identity, so the parser (called on every keystroke) costs one `stat` here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from cardrunner.config.cardfolder import BACKLOG_CONFIG
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
    """A project's `config.yml` as a Board; what cannot be read falls back to the defaults."""
    try:
        data = yaml.safe_load(read_regular(config, MAX_CONFIG_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return Board()
    if not isinstance(data, dict):
        return Board()
    statuses = _texts(data.get("statuses")) or DEFAULT_STATUSES
    return Board(statuses, _texts(data.get("definition_of_done")))


def _texts(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(item).strip() for item in value if str(item).strip())
