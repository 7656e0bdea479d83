"""Shared helpers for the MCP tests: server specs, an HTTP server process, and leak checks.

Every test proves that no server process it caused is left: test servers record their pid (and
their children's) under `<run_dir>/pids/`, hub pids are recorded as they appear, and after the
test each must be gone within a bounded wait.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cardrunner.events import Event
from cardrunner.settings import McpServer
from cardrunner.tools.base import ToolContext

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py").resolve()


def server_spec(timeout: float = 20, required: bool = False, **env: str) -> McpServer:
    """A stdio spec for our test server; `env` goes to its configured environment."""
    return McpServer(
        command=sys.executable, args=[str(TEST_SERVER)], env=env, timeout=timeout, required=required
    )


def context(events: list[Event] | None = None) -> ToolContext:
    sink = events if events is not None else []
    return ToolContext(round=1, emit=sink.append)


def recorded_pids(run_dir: Path) -> list[int]:
    folder = run_dir / "pids"
    return [int(p.name) for p in folder.iterdir()] if folder.is_dir() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    """The pids still alive after waiting up to `seconds` for them to end (orphans get reaped)."""
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def processes_with_arg(arg: str) -> list[int]:
    """Pids of live processes whose command line contains `arg` exactly (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv:
            found.append(int(entry.name))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, proc: subprocess.Popen[Any], seconds: float = 30.0) -> None:
    """Wait (bounded) until something accepts connections on `port`, or the process died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"HTTP test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"HTTP test server did not listen on {port} within {seconds} s")


@contextmanager
def http_server(
    run_dir: Path, port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Our test server over Streamable HTTP on 127.0.0.1; yields (url, process)."""
    port = port or free_port()
    env = {"PATH": os.environ.get("PATH", ""), "CARDRUNNER_RUN_DIR": str(run_dir)}
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "http-server.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, str(TEST_SERVER), "--http", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
