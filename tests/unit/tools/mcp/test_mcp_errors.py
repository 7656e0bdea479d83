"""MCP failures a user can act on, from real servers: the HTTP status and body of a refusal (at
start and on a call), a start timeout that says what the server printed and what a package
runner without network means, and a browser's `### Error` read by its reason."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cardrunner.config.settingsfiles import McpServer
from cardrunner.processes.groups import ProcessGroups
from cardrunner.tools.mcp.hub import McpHub
from tests.support.mcp_harness import context, recorded_pids, server_spec, wait_gone


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """The run's folder; afterwards no test server process recorded there may be left."""
    folder = tmp_path / "run"
    folder.mkdir()
    yield folder
    assert wait_gone(recorded_pids(folder)) == []


REFUSAL = "Access is only allowed at localhost:8931"


class Refusing(http.server.BaseHTTPRequestHandler):
    """A Streamable HTTP server that starts, lists one tool, and answers its call with a 403
    and a plain-text body; or (`refuse_all`) answers every message so, as a host check does."""

    refuse_all = False

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method = message.get("method", "")
        if self.refuse_all or method == "tools/call":
            return self._send(403, REFUSAL.encode(), "text/plain")
        if "id" not in message:
            return self._send(202, b"", "text/plain")
        result: dict[str, Any] = {"tools": [{"name": "go", "inputSchema": {"type": "object"}}]}
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "refusing", "version": "1"},
            }
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        self._send(200, body.encode(), "application/json")

    def do_GET(self) -> None:
        self._send(405, b"", "text/plain")

    do_DELETE = do_GET

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def refusing(refuse_all: bool) -> Iterator[str]:
    handler = type("Handler", (Refusing,), {"refuse_all": refuse_all})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


async def test_an_http_refusal_shows_its_status_and_body(run_dir: Path, tmp_path: Path) -> None:
    with refusing(refuse_all=True) as url:
        async with McpHub(
            {"pw": McpServer(url=url)}, run_dir, tmp_path, groups=ProcessGroups()
        ) as h:
            pass
    assert h.failures["pw"] == f"{url} answered HTTP 403 Forbidden: {REFUSAL}"
    with refusing(refuse_all=False) as url:
        async with McpHub(
            {"pw": McpServer(url=url)}, run_dir, tmp_path, groups=ProcessGroups()
        ) as h:
            assert [t.name for t in h.tools()] == ["mcp__pw__go"]
            called = await h.call("pw", "go", {})
    assert called.is_error
    assert (
        called.text
        == f"MCP server 'pw' rejected the call to go: it answered HTTP 403 Forbidden: {REFUSAL}"
    )


async def test_a_package_runner_that_never_starts_is_explained(
    run_dir: Path, tmp_path: Path
) -> None:
    npx = tmp_path / "bin" / "npx"  # as npx without network: it waits, and prints nothing
    npx.parent.mkdir()
    npx.write_text("#!/bin/sh\nexec sleep 60\n")
    npx.chmod(0o755)
    assert McpServer(command="npx", args=["@playwright/mcp"]).start_seconds == 120
    assert McpServer(command="pnpm", args=["dlx", "x"], timeout=200).start_seconds == 200
    assert McpServer(command="node", args=["server.js"]).start_seconds == 30
    spec = McpServer(command=str(npx), args=["@playwright/mcp"], start_timeout=1)
    groups = ProcessGroups()
    async with McpHub({"pw": spec}, run_dir, tmp_path, groups=groups) as h:
        pass
    said = h.failures["pw"]
    assert said.startswith(
        "did not start within 1 s (start_timeout); it printed nothing on stderr. "
    )
    assert "npx downloads a package the first time" in said and "no network" in said
    assert groups.live() == set()  # the waiting "npx" was ended with the hub


async def test_a_browser_error_is_read_by_its_reason(run_dir: Path, tmp_path: Path) -> None:
    async with McpHub({"t": server_spec()}, run_dir, tmp_path, groups=ProcessGroups()) as h:
        failed = await h.call("t", "browser_error", {}, context())
    assert failed.is_error
    first = failed.text.splitlines()[0]
    assert first == "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:5000/"
