"""Boards and databases from a repository are bounded (issue 38, item 5).

An attacker who writes a repository controls its `backlog/`: a task file (or the whole tasks
folder) linked to a file of another repository, a `config.yml` that is a YAML alias bomb; and a
Vibe Kanban database whose `tasks` is a view over an endless recursive query. Each is played
through the real `cardrunner` CLI, the language server, and the real SDK against the fake
Messages API, which records every request: nothing of the other repository reaches the model or
is rewritten, and every refusal comes back promptly, naming what was refused."""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from cardrunner.card.card import CardError, find_cards, load_card
from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.inprocess import InProcessEditor
from tests.support.lsp import make_project as make_lsp_project
from tests.support.project import cli, fix_transcript, git, init_repo, make_project

MARKER = f"SECRET-OF-THE-OTHER-REPOSITORY-{uuid.uuid4().hex[:8]}"

TASK = """---
id: TASK-1
title: {title}
status: To Do
---

## Description

<!-- SECTION:DESCRIPTION:BEGIN -->
{description}
<!-- SECTION:DESCRIPTION:END -->

## Acceptance Criteria
<!-- AC:BEGIN -->
- [ ] #1 `add(2, 3)` returns 5.
<!-- AC:END -->
"""

CONFIG = 'projectName: demo\nstatuses: ["To Do", "In Progress", "Done"]\n'

ALIAS_BOMB = """projectName: bomb
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
statuses: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def backlog_project(root: Path, config: str = CONFIG) -> Path:
    """The test project with a Backlog.md board and one honest task; returns its tasks folder."""
    make_project(root)
    tasks = root / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    (root / "backlog" / "config.yml").write_text(config)
    honest = TASK.format(title="Adding two numbers", description="`add(2, 3)` returns -1.")
    (tasks / "task-1 - Adding-two-numbers.md").write_text(honest)
    return tasks


def other_repository(root: Path) -> Path:
    """Another repository on the same machine, holding a task-shaped file with a secret."""
    root.mkdir(parents=True)
    secret = root / "private.md"
    text = TASK.format(title="Private work", description=f"The password is {MARKER}.")
    secret.write_text(text)
    init_repo(root)
    return secret


def test_a_linked_task_is_never_read_rewritten_or_sent(tmp_path: Path) -> None:
    secret = other_repository(tmp_path / "elsewhere")
    before = secret.read_bytes()
    root = tmp_path / "ws"
    tasks = backlog_project(root)
    linked = tasks / "task-2 - Looks-normal.md"
    linked.symlink_to(secret)
    (tasks / "task-3 - Dotdot.md").symlink_to(Path("..") / ".." / ".." / "elsewhere" / "private.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a board with links")

    assert find_cards(root, "backlog/tasks") == [tasks / "task-1 - Adding-two-numbers.md"]
    with pytest.raises(CardError, match="leads outside the repository"):
        load_card(linked)

    check = cli(root, "check", str(linked.relative_to(root)))
    assert check.returncode != 0 and "leads outside the repository" in check.stdout + check.stderr
    with FakeMessagesAPI(fix_transcript()) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test"}
        for card in (linked, tasks / "task-3 - Dotdot.md"):
            run = cli(root, "run", str(card.relative_to(root)), "--yes", env=env, timeout=120)
            assert run.returncode != 0, run.stdout
            assert "leads outside the repository" in run.stdout + run.stderr, run.stderr
        assert api.requests == []  # nothing reached the model
    assert secret.read_bytes() == before  # never rewritten
    assert not (secret.parent / ".cardrunner").exists()  # no run state kept over there
    assert MARKER not in "".join(p.read_text() for p in (root / ".cardrunner").rglob("*.jsonl"))


def test_a_linked_tasks_folder_holds_no_cards(tmp_path: Path) -> None:
    secret = other_repository(tmp_path / "elsewhere")
    root = tmp_path / "ws"
    tasks = backlog_project(root)
    for task in tasks.iterdir():
        task.unlink()
    tasks.rmdir()
    tasks.symlink_to(secret.parent)
    assert find_cards(root, "backlog/tasks") == []
    with pytest.raises(CardError, match="leads outside the repository"):
        load_card(tasks / secret.name)


async def test_the_editor_shows_no_card_that_leads_outside(tmp_path: Path) -> None:
    secret = other_repository(tmp_path / "elsewhere")
    project = make_lsp_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    honest = project.write_card("honest", title="An honest card")
    (honest.parent / "linked.md").symlink_to(secret)
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        board = await editor.request("cardrunner/board", None)
        titles = [c["title"] for col in board["columns"] for c in col["cards"]]
        assert titles == ["An honest card"], titles
        assert MARKER not in str(board)
    finally:
        await editor.stop()


def test_an_alias_bomb_config_is_refused_promptly_by_check(tmp_path: Path) -> None:
    assert len(ALIAS_BOMB.encode()) < 600
    root = tmp_path / "ws"
    backlog_project(root, config=ALIAS_BOMB)
    started = time.monotonic()
    check = cli(root, "check", timeout=60)
    took = time.monotonic() - started
    out = check.stdout + check.stderr
    assert check.returncode != 0, out
    assert "backlog/config.yml" in out and "refused" in out, out
    assert took < 30, took  # the whole CLI start included; unbounded, this never returns


async def test_an_alias_bomb_config_is_a_prompt_diagnostic_in_the_editor(tmp_path: Path) -> None:
    project = make_lsp_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = project.root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('cards = "cards"', 'cards = "backlog/tasks"'))
    tasks = project.root / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    (project.root / "backlog" / "config.yml").write_text(ALIAS_BOMB)
    task = tasks / "task-1 - Bomb.md"
    task.write_text(TASK.format(title="A task", description="Something."))
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        uri = editor.open(task)

        def refused() -> list[str] | None:
            messages = [d["message"] for d in editor.diagnostics(uri)]
            return messages if any("config.yml" in m and "refused" in m for m in messages) else None

        await editor.wait_for("a diagnostic naming the refused config.yml", refused)
    finally:
        await editor.stop()


def vibe_db(path: Path, tasks_sql: str) -> Path:
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE projects (id BLOB PRIMARY KEY, name TEXT);"
        "INSERT INTO projects VALUES (x'00112233445566778899aabbccddeeff', 'demo');" + tasks_sql
    )
    db.commit()
    db.close()
    return path


ENDLESS_VIEW = """
CREATE VIEW tasks AS
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
SELECT randomblob(16) AS id, 'title ' || i AS title, '' AS description, 'todo' AS status,
       x'00112233445566778899aabbccddeeff' AS project_id, i AS created_at FROM n;
"""


def test_a_vibe_kanban_tasks_view_over_an_endless_query_is_refused(tmp_path: Path) -> None:
    db = vibe_db(tmp_path / "db.sqlite", ENDLESS_VIEW)
    root = tmp_path / "ws"
    make_project(root)
    started = time.monotonic()
    done = cli(root, "import", "vibe-kanban", str(db), timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "tasks" in out and "not a table" in out, out
    assert time.monotonic() - started < 30
    assert list((root / "cards").glob("vk-*")) == []


def test_a_vibe_kanban_import_is_bounded_in_rows_and_time(tmp_path: Path) -> None:
    """A real table, but one no board has: a row bound refuses it instead of filling cards/."""
    from cardrunner.sources.vibekanban import MAX_TASKS, VibeKanbanError, read_tasks

    rows = MAX_TASKS + 1
    db = vibe_db(
        tmp_path / "db.sqlite",
        "CREATE TABLE tasks (id BLOB, title TEXT, description TEXT, status TEXT,"
        " project_id BLOB, created_at INTEGER);"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT "
        f"{rows}) INSERT INTO tasks SELECT randomblob(16), 't' || i, '', 'todo',"
        " x'00112233445566778899aabbccddeeff', i FROM n;",
    )
    with pytest.raises(VibeKanbanError, match="more than"):
        read_tasks(db)


def test_the_package_reads_yaml_only_through_the_bounded_loader() -> None:
    """One loader with alias and size limits: no `yaml.safe_load`/`yaml.load` anywhere else."""
    package = Path(__file__).resolve().parents[2] / "server" / "cardrunner"
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "yaml.safe_load(" in line or "yaml.load(" in line or "yaml.full_load(" in line
    ]
    offenders = [o for o in offenders if not o.startswith("card/text.py")]
    assert offenders == [], offenders
