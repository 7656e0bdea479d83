"""The project's instructions: which files, in which order, what is left out, where it is cut."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cardrunner.config.instructions import HEADING, read_instructions, strip_marked

BACKLOG = (
    "Use uv run.\n\n<!-- BACKLOG.MD GUIDELINES START -->\nAlways use the backlog CLI.\n"
    "<!-- BACKLOG.MD GUIDELINES END -->\nNever touch migrations/.\n"
)


def test_root_then_write_area_files_under_the_heading(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use uv run.\n")
    (tmp_path / "CLAUDE.md").write_text("not read: AGENTS.md exists\n")
    (tmp_path / "src" / "api").mkdir(parents=True)
    (tmp_path / "src" / "api" / "AGENTS.md").write_text("Handlers return JSON.\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "AGENTS.md").write_text("outside the write area\n")
    got = read_instructions(tmp_path, ["src"], 16_384)
    assert got.listed == ["AGENTS.md (12)", "src/api/AGENTS.md (22)"]
    assert got.text.startswith("\n\n" + HEADING)
    assert got.text.index("Use uv run.") < got.text.index("Handlers return JSON.")
    assert "not read" not in got.text and "outside the write area" not in got.text
    assert got.notes == []


def test_claude_md_when_there_is_no_agents_md(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Tests live in tests/unit.\n")
    got = read_instructions(tmp_path, ["src"], 16_384)
    assert got.listed == ["CLAUDE.md (26)"] and "Tests live in tests/unit." in got.text


def test_another_tools_block_is_left_out_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text(BACKLOG)
    got = read_instructions(tmp_path, [], 16_384)
    assert "backlog CLI" not in got.text and "BACKLOG.MD" not in got.text
    assert "Use uv run." in got.text and "Never touch migrations/." in got.text
    assert any("'BACKLOG.MD GUIDELINES'" in n and "left out" in n for n in got.notes)


def test_the_cap_cuts_at_a_line_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("".join(f"rule {i:03d}\n" for i in range(300)))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "AGENTS.md").write_text("late rule\n")
    got = read_instructions(tmp_path, ["src"], 1000)
    assert "rule 110" in got.text and "rule 111" not in got.text  # 9 bytes a line
    assert "[cut here:" in got.text and "late rule" not in got.text
    assert any("AGENTS.md was cut" in n for n in got.notes)
    assert any("src/AGENTS.md left out" in n for n in got.notes)


def test_a_fifo_named_agents_md_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    got = read_instructions(tmp_path, [], 16_384)
    assert got.text == "" and any("not read" in n and "FIFO" in n for n in got.notes)


def test_nothing_to_add_without_files(tmp_path: Path) -> None:
    got = read_instructions(tmp_path, ["src"], 16_384)
    assert (got.text, got.listed, got.notes) == ("", [], [])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_text_outside_marked_blocks_is_kept_byte_for_byte(text: str) -> None:
    block = "<!-- TOOL X START -->\nsecret\n<!-- TOOL X END -->\n"
    kept, names = strip_marked(text + block + text)
    if "-->" not in text and "<!--" not in text:
        assert (kept, names) == (text + text, ["TOOL X"])


def test_an_agents_md_pointing_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("a secret outside the repository\n")
    (root / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    got = read_instructions(root, [], 16_384)
    assert got.text == "" and any("points outside the repository" in n for n in got.notes)
