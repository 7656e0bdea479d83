"""Shared helpers for the MCP tests: server specs, an HTTP server process, and leak checks.

Every test proves that no server process it caused is left: test servers record their pid (and
their children's) under `<run_dir>/pids/`, hub pids are recorded as they appear, and after the
test each must be gone within a bounded wait.

Run as a program it is a small MCP server, one tool per behaviour to check:
`python tests/support/mcp_harness.py` (stdio) or `... --http PORT` (Streamable HTTP on
127.0.0.1, path `/mcp`). It writes its pid to `$CARDRUNNER_RUN_DIR/pids/` (when set) so the tests
can prove no server process outlives a run, including restarted ones and their children.

Environment switches (for failure tests):
- `MCP_TEST_FAIL_START=<message>`: print the message to stderr and exit 2 before serving.
- `MCP_TEST_FAIL_IF_EXISTS=<path>`: the same, once that file exists (a restart that fails).
- `MCP_TEST_START_DELAY=<seconds>`: sleep before serving (start-up timeout).
- `MCP_TEST_STUBBORN=1`: ignore SIGTERM and keep running when stdin closes.
- `MCP_TEST_RELIST_IF_EXISTS=<path>`: once that file exists, start without `big` and with
  `extra` (a server that comes back from a restart with a different tool list).
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Audio, Context, Image
from mcp.server.mcpserver.exceptions import ToolError

from cardrunner.agent.events import Event
from cardrunner.agent.toolpool import ToolContext
from cardrunner.config.settingsfiles import USER_SOURCE, McpServer

TEST_SERVER = Path(__file__).resolve()
"""This module, run as the test MCP server."""


def server_spec(
    timeout: float = 20, required: bool = False, source: str = USER_SOURCE, **env: str
) -> McpServer:
    """A stdio spec for our test server; `env` goes to its configured environment. By default
    the user's own (so secrets in `env` are filled); pass `source` for a repository's."""
    return McpServer(
        command=sys.executable,
        args=[str(TEST_SERVER)],
        env=env,
        timeout=timeout,
        required=required,
        source=source,
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
    # Imported here: run as the test MCP server, this file has no `tests` package on its path.
    from tests.support import processes

    return processes.wait_gone(pids, alive, seconds)


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


# The test MCP server (what runs when this file is a program).

server = MCPServer("cardrunner-test")


def _record_pid(pid: int) -> None:
    run_dir = os.environ.get("CARDRUNNER_RUN_DIR")
    if run_dir:
        folder = Path(run_dir) / "pids"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / str(pid)).write_text(str(pid))


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built by hand so the test needs no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@server.tool()
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> types.CallToolResult:
    """Add two numbers; the answer is structured content only (no text block)."""
    return types.CallToolResult(content=[], structured_content={"a": a, "b": b, "sum": a + b})


@server.tool()
def image() -> Image:
    """A 1x1 PNG."""
    return Image(data=tiny_png(), format="png")


@server.tool()
def audio() -> Audio:
    """A few bytes of 'audio'."""
    return Audio(data=b"RIFF\x00\x00\x00\x00WAVE", format="wav")


@server.tool()
def embedded() -> list[types.EmbeddedResource]:
    """One embedded text resource and one embedded blob."""
    blob = base64.b64encode(b"\x00\x01binary").decode()
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///notes.txt", text="line 1\nline 2"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///data.bin", blob=blob, mime_type="application/octet-stream"
            ),
        ),
    ]


@server.tool()
def fail() -> str:
    """Fail the way a tool should: with a message for the model."""
    raise ToolError("the widget is broken")


@server.tool()
def browser_error() -> types.CallToolResult:
    """Fail the way Playwright MCP does: a `### Error` heading, the reason on the next line."""
    text = "### Error\nError: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:5000/"
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@server.tool()
def crash() -> str:
    """Die in the middle of the call."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def big() -> str:
    """10,000 characters of numbered lines."""
    text = "".join(f"line {i:05d} of the big output\n" for i in range(400))
    return text[:10_000]


@server.tool()
def links() -> list[types.ResourceLink]:
    """A resource link."""
    return [
        types.ResourceLink(type="resource_link", name="README", uri="file:///project/README.md")
    ]


@server.tool()
def noisy() -> str:
    """Print a stray non-JSON line to stdout (a common server bug), then answer."""
    sys.stdout.write("debug: not a JSON-RPC message\n")
    sys.stdout.flush()
    return "answered anyway"


@server.tool()
def environment() -> str:
    """The server's environment as `NAME=value` lines, sorted."""
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header ('' when absent or over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def spawn_child() -> int:
    """Start a child that ignores SIGTERM and lives on; returns its pid."""
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(3600)\n"
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _record_pid(child.pid)
    return child.pid


@server.tool()
def touch(path: str) -> str:
    """Try to create the file at `path` (a payload that tries to write outside its sandbox)."""
    try:
        Path(path).write_text("touched\n")
    except OSError as exc:
        return f"refused: {exc}"
    return f"wrote {path}"


def extra(text: str) -> str:
    """A tool only a restarted server offers."""
    return f"extra: {text}"


@server.tool()
def fetch(url: str) -> str:
    """GET `url` from where the server runs (a browser's view of the app): status and page."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=10) as answer:
            return f"HTTP {answer.status}\n{answer.read().decode('utf-8', 'replace')}"
    except OSError as exc:
        return f"failed: {exc}"


def main() -> None:
    _record_pid(os.getpid())
    message = os.environ.get("MCP_TEST_FAIL_START")
    marker = os.environ.get("MCP_TEST_FAIL_IF_EXISTS")
    if marker and Path(marker).exists():
        message = f"refusing to start: {marker} exists"
    if message:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        sys.exit(2)
    relist = os.environ.get("MCP_TEST_RELIST_IF_EXISTS")
    if relist and Path(relist).exists():
        server.remove_tool("big")
        server.add_tool(extra)
    delay = os.environ.get("MCP_TEST_START_DELAY")
    if delay:
        time.sleep(float(delay))
    if os.environ.get("MCP_TEST_STUBBORN"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=lambda: time.sleep(3600)).start()  # outlives stdin's end
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main()
