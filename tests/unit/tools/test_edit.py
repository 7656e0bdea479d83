"""`edit_file`: exact replacements, each matching once, all or nothing, behind the path guard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard

TEXT = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "calc.py").write_text(TEXT)
    (tmp_path / "docs" / "a.md").write_text("read only\n")
    return tmp_path


@pytest.fixture
def pool(ws: Path) -> ToolPool:
    return ToolPool(file_tools(PathGuard(ws, read=["."], write=["src"])))


async def edit(pool: ToolPool, path: str, *pairs: tuple[str, str]) -> Any:
    edits = [{"old_text": old, "new_text": new} for old, new in pairs]
    return await pool.execute("edit_file", {"path": path, "edits": edits}, ToolContext(1, print))


async def test_an_edit_that_matches_once_is_applied(ws: Path, pool: ToolPool) -> None:
    result = await edit(
        pool,
        "src/calc.py",
        ("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"),
    )
    assert not result.is_error, result.text
    assert result.text == "edited src/calc.py: 1 replacement(s) at line 1 (2 → 2 lines)"
    assert (ws / "src/calc.py").read_text() == TEXT.replace("a - b", "a + b", 1)


async def test_text_found_twice_is_refused_and_nothing_changes(ws: Path, pool: ToolPool) -> None:
    result = await edit(pool, "src/calc.py", ("return a - b", "return a + b"))
    assert result.is_error
    assert "occurs 2 times in src/calc.py" in result.text and "surrounding lines" in result.text
    assert (ws / "src/calc.py").read_text() == TEXT


async def test_missing_text_is_refused_and_earlier_edits_are_not_kept(
    ws: Path, pool: ToolPool
) -> None:
    result = await edit(pool, "src/calc.py", ("def add", "def plus"), ("return a * b", "x"))
    assert result.is_error
    assert result.text.startswith("edit 2: old_text was not found in src/calc.py")
    assert "Nothing was changed" in result.text
    assert (ws / "src/calc.py").read_text() == TEXT


async def test_edits_apply_in_order_to_what_the_earlier_ones_left(ws: Path, pool: ToolPool) -> None:
    result = await edit(
        pool,
        "src/calc.py",
        ("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a - b  # sub"),
        ("return a - b\n\n", "return a + b\n\n"),  # only the first one is left unmarked
    )
    assert not result.is_error, result.text
    assert (ws / "src/calc.py").read_text() == (
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b  # sub\n"
    )


async def test_paths_outside_the_write_folders_and_missing_files_are_refused(
    pool: ToolPool,
) -> None:
    outside = await edit(pool, "docs/a.md", ("read only", "changed"))
    assert outside.is_error and "docs/a.md" in outside.text
    missing = await edit(pool, "src/nope.py", ("a", "b"))
    assert missing.is_error and "does not exist; create it with write_file" in missing.text
    empty = await edit(pool, "src/calc.py", ("", "b"))
    assert empty.is_error and "old_text is empty" in empty.text


async def test_a_change_the_user_made_elsewhere_in_the_file_is_kept(
    ws: Path, pool: ToolPool
) -> None:
    written = await pool.execute(
        "write_file", {"path": "src/calc.py", "content": TEXT}, ToolContext(1, print)
    )
    assert not written.is_error
    (ws / "src/calc.py").write_text(TEXT + "\n# the user's note\n")
    result = await edit(pool, "src/calc.py", ("def add", "def plus"))
    assert not result.is_error, result.text
    assert (ws / "src/calc.py").read_text().endswith("# the user's note\n")
    assert (ws / "src/calc.py").read_text().startswith("def plus")
