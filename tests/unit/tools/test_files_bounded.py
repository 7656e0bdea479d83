"""Nothing of the user's is lost, and no file makes a tool wait: real files, FIFOs and sockets."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cardrunner.agent.events import Event, Notice
from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    return root


def tools(ws: Path, timeout: float = 120.0) -> ToolPool:
    return ToolPool(file_tools(PathGuard(ws, read=["."], write=["src"]), timeout=timeout))


async def call(pool: ToolPool, name: str, events: list[Event] | None = None, **args: object):  # type: ignore[no-untyped-def]
    ctx = ToolContext(round=1, emit=(events if events is not None else []).append)
    # bounded here too: a regression must fail this test, not hang it
    async with asyncio.timeout(20):
        return await pool.execute(name, args, ctx)


async def test_a_user_edit_to_a_file_the_model_only_read_is_kept_and_reported(ws: Path) -> None:
    pool, events = tools(ws), list[Event]()
    seen = await call(pool, "read_file", path="src/main.py")
    assert seen.text == "print('hi')\n"
    (ws / "src" / "main.py").write_text("print('the user was here')\n")
    clash = await call(pool, "write_file", events, path="src/main.py", content="print(1)\n")
    assert clash.is_error and "since you last read or wrote it" in clash.text
    assert (ws / "src" / "main.py").read_text() == "print('the user was here')\n"
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and notices[0].message.startswith("kept your edit: src/main.py")
    again = await call(pool, "read_file", path="src/main.py")
    assert "the user was here" in again.text
    merged = await call(pool, "write_file", path="src/main.py", content="print('both')\n")
    assert not merged.is_error and (ws / "src" / "main.py").read_text() == "print('both')\n"


async def test_a_fifo_fails_fast_for_every_file_tool(ws: Path) -> None:
    os.mkfifo(ws / "src" / "pipe")
    pool = tools(ws)
    read = await call(pool, "read_file", path="src/pipe")
    assert read.is_error and "is a FIFO (named pipe)" in read.text
    listed = await call(pool, "list_files", path="src")
    assert "src/pipe" in listed.text
    await call(pool, "read_file", path="src/main.py")  # the run now knows main.py
    (ws / "src" / "main.py").unlink()
    os.mkfifo(ws / "src" / "main.py")  # swapped for a FIFO after the model read it
    clash = await call(pool, "write_file", path="src/main.py", content="print(2)\n")
    assert clash.is_error and "is a FIFO" in clash.text
    written = await call(pool, "write_file", path="src/pipe", content="data")
    assert not written.is_error and (ws / "src" / "pipe").read_text() == "data"


async def test_a_socket_is_refused_by_read_file(ws: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    with server:
        server.bind(str(ws / "src" / "sock"))
        result = await call(tools(ws), "read_file", path="src/sock")
    assert result.is_error and "is a socket" in result.text


def test_tool_timeout_seconds_bounds_every_file_tool(ws: Path) -> None:
    assert {t.name: t.timeout for t in file_tools(PathGuard(ws, ["."], ["src"]), timeout=7)} == {
        "list_files": 7,
        "read_file": 7,
        "write_file": 7,
        "edit_file": 7,
    }


def test_the_cli_loop_exits_with_its_status_although_a_worker_thread_hangs(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "never-opened-for-writing"
    os.mkfifo(fifo)
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        from cardrunner.cli.exiting import run_bounded

        async def main() -> int:
            loop = asyncio.get_running_loop()
            loop.run_in_executor(None, open, {str(fifo)!r})  # blocks in the kernel for good
            await asyncio.sleep(0.2)
            print("result printed", flush=True)
            return 3

        sys.exit(run_bounded(main(), grace=0.5))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "result printed\n"), done.stderr
