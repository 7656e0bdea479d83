"""A run's web app seen by the run's own MCP server: the scripted model starts the app
(`app_url`), the test server's `fetch` tool opens that URL from inside the run's private network
and sees the page; after the run, and after a cancelled run, no process group of it is left."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.events import RunFinished, RunStarted, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.processes.bwrapprobe import probe
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.mcp_harness import TEST_SERVER, free_port, http_server
from tests.unit.tools.mcp.test_mcp_loop import tool_result_text

pytestmark = pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")

CARD = """---
title: Look at the page
state: New
category: Chore
---
Open the app's page.

**Acceptance criteria**

- The page was seen.
"""


SERVE = """
import http.server, pathlib, sys
page = pathlib.Path("site/index.html").read_bytes()  # read once: a restart shows a change

class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(page)

print("serving", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Page).serve_forever()
"""


def workspace(root: Path) -> tuple[Path, str]:
    """A repository with a web app on a port free on the host, and the test MCP server."""
    for folder in ("src", "cards", "site"):
        (root / folder).mkdir(parents=True)
    (root / "site" / "index.html").write_text("<h1>the run's own page 51c9</h1>\n")
    (root / "site" / "serve.py").write_text(SERVE)
    (root / "cards" / "look.md").write_text(CARD)
    port = free_port()
    app = ["python", "site/serve.py", str(port)]
    (root / "cardrunner.toml").write_text(
        'require_evidence = false\n\n[paths]\nwrite = ["site"]\n\n[commands]\n'
        f"app = {json.dumps(app)}\napp_url = {port}\n\n[mcp.web]\n"
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([str(TEST_SERVER)])}\n"
        "required = true\n"
    )
    (root / ".gitignore").write_text(".cardrunner/\n")
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.email=d@example.com", "-c", "user.name=D", "add", "-A"],
        ["-c", "user.email=d@example.com", "-c", "user.name=D", "commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    return root / "cards" / "look.md", f"http://localhost:{port}/"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {
        "content": [{"type": "tool_use", "name": name, "input": args}],
        "stop_reason": "tool_use",
    }


def steps(url: str, *rest: Any) -> list[Any]:
    return [call("start_app"), call("mcp__web__fetch", url=url), *rest]


def host_cannot_open(url: str) -> None:
    """From the host (outside the run's network) the app's URL is refused."""
    tried = subprocess.run(
        [sys.executable, "-c", f"import urllib.request as u; u.urlopen({url!r}, timeout=5)"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert tried.returncode != 0 and "Connection refused" in tried.stderr, tried.stderr


async def test_the_runs_mcp_server_sees_the_runs_app(tmp_path: Path) -> None:
    card, url = workspace(tmp_path / "ws")
    settings, problems = load_settings(tmp_path / "ws")
    assert not problems

    def done(body: dict[str, Any], index: int) -> dict[str, Any]:
        host_cannot_open(url)  # while the app runs and answers inside
        return {"content": [{"type": "text", "text": "Seen.\nRESULT: done"}]}

    changed = call("write_file", path="site/index.html", content="<h1>changed 0d2e</h1>")
    model = ScriptedModel(steps(url, changed, call("mcp__web__fetch", url=url), done))
    options = RunOptions(
        root=tmp_path / "ws", card_path=card, settings=settings, model=model,
        approver=AutoApprover(),
    )  # fmt: skip
    events = [e async for e in run_card(options)]
    model.assert_complete()
    first = model.requests[0]["messages"][0]["content"][0]["text"]
    assert f"The app is a web app at {url}" in first and "private network" in first
    started, _ = tool_result_text(model.requests[1])
    assert f"It answers at {url} (HTTP 200" in started
    page, is_error = tool_result_text(model.requests[2])
    assert not is_error and page.startswith("HTTP 200\n") and "the run's own page 51c9" in page
    wrote, _ = tool_result_text(model.requests[3])
    assert "[The app was restarted to run this change; it runs at " + url in wrote
    again, _ = tool_result_text(model.requests[4])
    assert "changed 0d2e" in again, again  # not the old page a stale app would serve
    assert isinstance(events[-1], RunFinished)
    assert options.processes.live() == set()


async def test_a_cancelled_run_leaves_no_process_group(tmp_path: Path) -> None:
    card, url = workspace(tmp_path / "ws")
    settings, _ = load_settings(tmp_path / "ws")
    options = RunOptions(
        root=tmp_path / "ws", card_path=card, settings=settings,
        model=ScriptedModel(steps(url, call("mcp__web__hang"))),
        approver=AutoApprover(),
    )  # fmt: skip
    fetched = asyncio.Event()

    async def play() -> None:
        async for event in run_card(options):
            if isinstance(event, ToolFinished) and event.name == "mcp__web__fetch":
                fetched.set()

    task = asyncio.create_task(play())
    async with asyncio.timeout(60):
        await fetched.wait()
    live = options.processes.live()
    assert len(live) >= 2, live  # the app and the MCP server are running
    task.cancel()
    async with asyncio.timeout(60):
        await asyncio.gather(task, return_exceptions=True)
    assert options.processes.live() == set()


async def test_a_server_reached_over_http_sees_the_app_through_the_forwarded_port(
    tmp_path: Path,
) -> None:
    card, url = workspace(tmp_path / "ws")
    with http_server(tmp_path / "outside") as (server_url, _):
        with (tmp_path / "ws" / "cardrunner.toml").open("a") as toml:
            toml.write(f'\n[mcp.outside]\nurl = "{server_url}"\n')
        settings, problems = load_settings(tmp_path / "ws")
        assert not problems

        def fetch_forwarded(body: dict[str, Any], index: int) -> dict[str, Any]:
            started, _ = tool_result_text(body)
            found = re.search(r"they reach it at (\S+) instead", started)
            assert found and found[1] != url, started  # not the app's own, inside the network
            return call("mcp__outside__fetch", url=found[1])

        done = {"content": [{"type": "text", "text": "Seen.\nRESULT: done"}]}
        model = ScriptedModel([call("start_app"), fetch_forwarded, done])
        options = RunOptions(
            root=tmp_path / "ws", card_path=card, settings=settings, model=model,
            approver=AutoApprover(),
        )  # fmt: skip
        events = [e async for e in run_card(options)]
    model.assert_complete()
    started = next(e for e in events if isinstance(e, RunStarted))
    assert any("'outside' is reached over HTTP" in w for w in started.warnings)
    page, is_error = tool_result_text(model.requests[2])
    assert not is_error and "the run's own page 51c9" in page, page
    assert options.processes.live() == set()
