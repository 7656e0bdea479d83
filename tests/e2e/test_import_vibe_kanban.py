"""`cardrunner import vibe-kanban PATH` on a database made by Vibe Kanban's own migrations.

The schema is built with the SQL statements of Vibe Kanban's migrations that shape its
`projects` and `tasks` tables (crates/db/migrations/, in order), so the importer reads the
file as Vibe Kanban left it; rows are written the way it writes them (UUIDs as 16 bytes).
"""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from pathlib import Path

import pytest

from cardrunner.card.card import load_card
from tests.support.project import cli, make_project

MIGRATIONS = [
    # 20250617183714_init.sql
    """CREATE TABLE projects (
    id            BLOB PRIMARY KEY,
    name          TEXT NOT NULL,
    git_repo_path TEXT NOT NULL DEFAULT '' UNIQUE,
    setup_script  TEXT DEFAULT '',
    created_at    TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    updated_at    TEXT NOT NULL DEFAULT (datetime('now', 'subsec'))
);
CREATE TABLE tasks (
    id          BLOB PRIMARY KEY,
    project_id  BLOB NOT NULL,
    title       TEXT NOT NULL,
    description TEXT,
    status      TEXT NOT NULL DEFAULT 'todo'
                   CHECK (status IN ('todo','inprogress','done','cancelled','inreview')),
    created_at  TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    updated_at  TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    FOREIGN KEY (project_id) REFERENCES projects(id) ON DELETE CASCADE
);
CREATE TABLE task_attempts (
    id            BLOB PRIMARY KEY,
    task_id       BLOB NOT NULL,
    worktree_path TEXT NOT NULL,
    merge_commit  TEXT,
    executor      TEXT,
    stdout        TEXT,
    stderr        TEXT,
    created_at    TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    updated_at    TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    FOREIGN KEY (task_id) REFERENCES tasks(id) ON DELETE CASCADE
);""",
    # 20250625000000_add_dev_script_to_projects.sql
    "ALTER TABLE projects ADD COLUMN dev_script TEXT DEFAULT '';",
    # 20250716170000_add_parent_task_to_tasks.sql
    """ALTER TABLE tasks ADD COLUMN parent_task_attempt BLOB REFERENCES task_attempts(id);
CREATE INDEX idx_tasks_parent_task_attempt ON tasks(parent_task_attempt);""",
    # 20251114000000_create_shared_tasks.sql (the projects part)
    "ALTER TABLE projects ADD COLUMN remote_project_id BLOB;",
    # 20251209000000_add_project_repositories.sql, step 12
    """CREATE TABLE projects_new (
    id                BLOB PRIMARY KEY,
    name              TEXT NOT NULL,
    dev_script        TEXT,
    remote_project_id BLOB,
    created_at        TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
    updated_at        TEXT NOT NULL DEFAULT (datetime('now', 'subsec'))
);
INSERT INTO projects_new (id, name, dev_script, remote_project_id, created_at, updated_at)
SELECT id, name, dev_script, remote_project_id, created_at, updated_at
FROM projects;
DROP TABLE projects;
ALTER TABLE projects_new RENAME TO projects;
CREATE UNIQUE INDEX IF NOT EXISTS idx_projects_remote_project_id
    ON projects(remote_project_id)
    WHERE remote_project_id IS NOT NULL;""",
    # 20251216142123_refactor_task_attempts_to_workspaces_sessions.sql, steps 1 and 6
    """ALTER TABLE task_attempts RENAME TO workspaces;
DROP INDEX IF EXISTS idx_tasks_parent_task_attempt;
ALTER TABLE tasks RENAME COLUMN parent_task_attempt TO parent_workspace_id;
CREATE INDEX idx_tasks_parent_workspace_id ON tasks(parent_workspace_id);""",
]

APP, OTHER = uuid.uuid4(), uuid.uuid4()
TASKS = [
    ("todo", "Add a subtract function", "We need `sub`.\n\n- [ ] sub(5, 3) returns 2\n"),
    ("inprogress", "Greet: in English", "## Acceptance criteria\n\n- It says Hello.\n"),
    ("inreview", "Review me", "- [ ] It is reviewed"),
    ("done", "Done already", "- [x] It was done"),
    ("cancelled", "Dropped idea", "Not needed.\n\n- [ ] Nothing"),
    ("todo", "Vague wish", "Make it nicer."),
]


NOW = "2026-01-05 10:00:00.000"
"""Written out: `datetime('now', 'subsec')`, the columns' default, needs SQLite 3.42."""


def add_project(db: sqlite3.Connection, project: uuid.UUID, name: str) -> None:
    db.execute(
        "INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (project.bytes, name, NOW, NOW),
    )


def add_task(
    db: sqlite3.Connection, project: uuid.UUID, title: str, description: str, status: str
) -> None:
    db.execute(
        "INSERT INTO tasks (id, project_id, title, description, status, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (uuid.uuid4().bytes, project.bytes, title, description, status, NOW, NOW),
    )


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "db.v2.sqlite"
    db = sqlite3.connect(path)
    for sql in MIGRATIONS:
        db.executescript(sql)
    add_project(db, APP, "app")
    for status, title, description in TASKS:
        add_task(db, APP, title, description, status)
    db.commit()
    db.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_task_becomes_one_card_with_its_state_and_only_once(
    tmp_path: Path, database: Path
) -> None:
    repo = tmp_path / "repo"
    make_project(repo)
    before = digest(database)
    database.chmod(0o444)  # read-only: the import never needs to write
    proc = cli(repo, "import", "vibe-kanban", str(database))
    assert proc.returncode == 0, proc.stderr
    assert "6 new card(s); 0 task(s) already imported" in proc.stdout
    assert "cards/vk-vague-wish.md has no acceptance criteria" in proc.stderr
    vague = (repo / "cards" / "vk-vague-wish.md").read_text()
    assert vague.startswith("---\ntitle: Vague wish\nstate: New\n") and "Make it nicer." in vague
    paths = [p for p in (repo / "cards").glob("vk-*.md") if p.name != "vk-vague-wish.md"]
    cards = {load_card(p).title: load_card(p) for p in paths}
    states = {title: card.state for title, card in cards.items()}
    assert states == {
        "Add a subtract function": "New",
        "Greet: in English": "In Work",
        "Review me": "Review",
        "Done already": "Done",
        "Dropped idea": "Failed",
    }
    subtract = cards["Add a subtract function"]
    assert subtract.criteria == ["sub(5, 3) returns 2"] and subtract.description == "We need `sub`."
    assert cards["Greet: in English"].criteria == ["It says Hello."]
    assert cards["Dropped idea"].reason == "cancelled in Vibe Kanban"
    ids = {c.source for c in cards.values()}
    assert all(s and s.startswith("vibe-kanban:task/") and uuid.UUID(s[17:]) for s in ids)
    assert digest(database) == before

    again = cli(repo, "import", "vibe-kanban", str(database))
    assert again.returncode == 0, again.stderr
    assert "0 new card(s); 6 task(s) already imported" in again.stdout
    assert len(list((repo / "cards").glob("vk-*.md"))) == 6


def test_several_projects_need_a_choice(tmp_path: Path, database: Path) -> None:
    repo = tmp_path / "repo"
    make_project(repo)
    db = sqlite3.connect(database)
    add_project(db, OTHER, "other")
    add_task(db, OTHER, "Elsewhere", "- [ ] x", "todo")
    db.commit()
    db.close()
    proc = cli(repo, "import", "vibe-kanban", str(database))
    assert proc.returncode == 2 and "choose one with --project: ['app', 'other']" in proc.stderr
    chosen = cli(repo, "import", "vibe-kanban", str(database), "--project", "other")
    assert chosen.returncode == 0, chosen.stderr
    assert [p.name for p in (repo / "cards").glob("vk-*.md")] == ["vk-elsewhere.md"]


def test_a_file_that_is_not_a_board_fails_clearly(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_project(repo)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).close()
    proc = cli(repo, "import", "vibe-kanban", str(other))
    assert proc.returncode == 1 and "is not a Vibe Kanban database" in proc.stderr
    missing = cli(repo, "import", "vibe-kanban", str(tmp_path / "nowhere.sqlite"))
    assert missing.returncode == 1 and "no such file" in missing.stderr
    assert sorted(p.name for p in (repo / "cards").iterdir()) == ["fix-add.md"]
