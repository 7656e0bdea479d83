"""`read_file` through a text source (an ACP client's open buffers): the guard decides first."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import MAX_READ_BYTES, PathGuard


class Buffers:
    """A source holding unsaved text for some files; records every path it was asked for."""

    def __init__(self, texts: dict[Path, str]) -> None:
        self.texts = texts
        self.asked: list[Path] = []

    async def __call__(self, path: Path) -> str | None:
        self.asked.append(path)
        return self.texts.get(path)


def ctx() -> ToolContext:
    return ToolContext(round=1, emit=lambda _: None)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src" / "main.py").write_text("print('saved')\n")
    (root / "src" / "same.py").write_text("x = 1\n")
    (root / "src" / "blob.bin").write_bytes(b"\0\1\2")
    (tmp_path / "secret.txt").write_text("secret\n")
    (root / "src" / "link").symlink_to(tmp_path / "secret.txt")
    return root


async def test_the_source_supplies_unsaved_text_and_says_so(ws: Path) -> None:
    main = (ws / "src" / "main.py").resolve()
    same = (ws / "src" / "same.py").resolve()
    buffers = Buffers({main: "print('unsaved')\n", same: "x = 1\n"})
    pool = ToolPool(file_tools(PathGuard(ws, ["."], ["src"]), source=buffers))
    read = await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    assert not read.is_error
    assert read.text.endswith("print('unsaved')\n") and "changes not saved yet" in read.text
    assert "saved')" not in read.text.replace("unsaved')", "")
    unchanged = await pool.execute("read_file", {"path": "src/same.py"}, ctx())
    assert unchanged.text == "x = 1\n"  # the same text: no note
    assert buffers.asked == [main, same]  # the resolved, absolute path


async def test_the_guard_decides_before_the_source_is_asked(ws: Path, tmp_path: Path) -> None:
    secret = (tmp_path / "secret.txt").resolve()
    buffers = Buffers({secret: "from the editor\n", ws / ".git" / "config": "x"})
    pool = ToolPool(file_tools(PathGuard(ws, ["."], ["src"]), source=buffers))
    for path in ("../secret.txt", "src/link", ".git/config", "src/blob.bin", "src/nope.py"):
        result = await pool.execute("read_file", {"path": path}, ctx())
        assert result.is_error and "from the editor" not in result.text, path
    assert buffers.asked == []


async def test_writes_stay_on_disk_and_a_source_read_does_not_block_them(ws: Path) -> None:
    main = (ws / "src" / "main.py").resolve()
    pool = ToolPool(file_tools(PathGuard(ws, ["."], ["src"]), source=Buffers({main: "u\n"})))
    await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    # the conflict guard knows the saved file, so the write is no conflict
    wrote = await pool.execute("write_file", {"path": "src/main.py", "content": "new\n"}, ctx())
    assert not wrote.is_error, wrote.text
    assert (ws / "src" / "main.py").read_bytes() == b"new\n"


async def test_a_source_without_the_file_or_too_big_falls_back_or_refuses(ws: Path) -> None:
    main = (ws / "src" / "main.py").resolve()
    pool = ToolPool(file_tools(PathGuard(ws, ["."], ["src"]), source=Buffers({})))
    read = await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    assert read.text == "print('saved')\n"
    big = Buffers({main: "x" * (MAX_READ_BYTES + 1)})
    pool = ToolPool(file_tools(PathGuard(ws, ["."], ["src"]), source=big))
    refused = await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    assert refused.is_error and "too large" in refused.text
