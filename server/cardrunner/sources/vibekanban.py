"""Vibe Kanban's local board as cards: one card per task, its status as the card's state.

Vibe Kanban kept its boards in a local SQLite file (`db.sqlite`, later `db.v2.sqlite`, in
`~/.local/share/vibe-kanban/` on Linux, `~/Library/Application Support/ai.bloop.vibe-kanban/` on
macOS); when it shut down, that file was all its users had. Its `projects` and `tasks` tables
(`id` a UUID as 16 bytes, `title`, `description`, `status`, `project_id`) have kept the same
shape through its migrations, so they are read directly with the standard library, opened
read-only (`mode=ro`): an import never writes to the file it rescues work from.

The file may come from anywhere (a download, a repository), and SQLite runs what its schema says:
a `tasks` that is a view over an endless recursive query would hang the import. So only real
tables are read (`sqlite_master` says `table`, and views are refused by name), under a time bound
(a progress handler interrupts the query after `MAX_SECONDS`) and a row bound (`MAX_TASKS`, far
above any board), and triggers and the file's own defensive settings cannot run anything: the
connection is read-only and `trusted_schema` is off.

Each task becomes a card with `source: vibe-kanban:task/<uuid>`, how a task already imported is
recognised on the next import (`sources/issues.py` does the same for issues). A description's
task list or "Acceptance criteria" section becomes the criteria; a task without either is
still imported (it is the user's work), and the import says which cards need criteria.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cardrunner.card.card import readable_words
from cardrunner.card.record import unclosing
from cardrunner.sources.issues import (
    card_head,
    free_path,
    imported_sources,
    visible_text,
    with_criteria,
)

STATES = {
    "todo": ("New", None),
    "inprogress": ("In Work", None),
    "inreview": ("Review", None),
    "done": ("Done", None),
    "cancelled": ("Failed", "cancelled in Vibe Kanban"),
}
"""Vibe Kanban's task status → the card's state (and its reason)."""


MAX_TASKS = 20_000
"""More tasks than any board a person kept: a file with more is refused, not imported."""
MAX_SECONDS = 10.0
"""How long reading the tasks may take before the import is refused."""
_PROGRESS_STEPS = 10_000
"""SQLite virtual-machine steps between two looks at the clock."""
_TABLES = ("tasks", "projects")


class VibeKanbanError(Exception):
    """The file is not a Vibe Kanban database cardrunner can read; str() says why."""


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    description: str
    status: str
    project: str

    @property
    def source(self) -> str:
        return f"vibe-kanban:task/{self.id}"


@dataclass(frozen=True)
class Moved:
    """What one import did: cards written (and which of them lack criteria), tasks known."""

    written: list[Path]
    without_criteria: list[Path]
    known: list[str]


def _uuid(value: object) -> str:
    if isinstance(value, bytes) and len(value) == 16:
        return str(uuid.UUID(bytes=value))
    return str(value)


def read_tasks(path: Path) -> list[Task]:
    """Every task of the database at `path`, oldest first, opened read-only."""
    if not path.is_file():
        raise VibeKanbanError(f"no such file: {path}")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise VibeKanbanError(f"cannot open {path}: {error}") from error
    deadline = time.monotonic() + MAX_SECONDS
    db.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
    try:
        db.execute("PRAGMA trusted_schema = OFF")
        _only_tables(db, path)
        rows = db.execute(
            "SELECT t.id, t.title, t.description, t.status, p.name FROM main.tasks t "
            "JOIN main.projects p ON p.id = t.project_id ORDER BY t.created_at, t.rowid "
            f"LIMIT {MAX_TASKS + 1}"
        ).fetchall()
    except sqlite3.OperationalError as error:
        if time.monotonic() > deadline:
            raise VibeKanbanError(
                f"{path}: reading its tasks took longer than {MAX_SECONDS:.0f} s; refused"
            ) from error
        raise VibeKanbanError(f"{path} is not a Vibe Kanban database: {error}") from error
    except sqlite3.Error as error:
        raise VibeKanbanError(f"{path} is not a Vibe Kanban database: {error}") from error
    finally:
        db.close()
    if len(rows) > MAX_TASKS:
        raise VibeKanbanError(f"{path} has more than {MAX_TASKS:,} tasks; refused")
    return [Task(_uuid(i), str(t), str(d or ""), str(s), str(p)) for i, t, d, s, p in rows]


def _only_tables(db: sqlite3.Connection, path: Path) -> None:
    """VibeKanbanError unless `tasks` and `projects` are real tables: a view runs whatever
    query the file's author wrote (an endless recursive one hangs the import)."""
    kinds = dict(
        db.execute(
            "SELECT name, type FROM main.sqlite_master WHERE name IN (?, ?)", _TABLES
        ).fetchall()
    )
    for name in _TABLES:
        kind = kinds.get(name)
        if kind is None:
            raise VibeKanbanError(f"{path} is not a Vibe Kanban database: no `{name}` table")
        if kind != "table":
            raise VibeKanbanError(
                f"{path}: `{name}` is a {kind}, not a table; a Vibe Kanban database is refused"
                " when reading it would run a query its author wrote"
            )


def card_text(task: Task) -> tuple[str, bool]:
    """The card for a task, and whether it has criteria."""
    state, reason = STATES.get(task.status, ("New", None))
    seen = visible_text(task.description)  # what the board showed, without hidden content
    description = f"{seen.text}\n\n({seen.notes()})" if seen.notes() else seen.text
    body = with_criteria(description)
    title = unclosing(" ".join(visible_text(task.title, 300).text.split()), note=False)
    text = card_head(title, task.source, state, reason)
    return text + (body or (description.strip() + "\n").lstrip("\n")), body is not None


def import_tasks(tasks: list[Task], folder: Path) -> Moved:
    """Write a card into `folder` for each task not imported before."""
    folder.mkdir(parents=True, exist_ok=True)
    known = imported_sources(folder)
    result = Moved([], [], [])
    for task in tasks:
        if task.source in known:
            result.known.append(task.id)
            continue
        text, has_criteria = card_text(task)
        path = free_path(folder, f"vk-{readable_words(task.title)}")
        with path.open("x", encoding="utf-8") as file:  # never through a planted symlink
            file.write(text)
        known.add(task.source)
        result.written.append(path)
        if not has_criteria:
            result.without_criteria.append(path)
    return result
