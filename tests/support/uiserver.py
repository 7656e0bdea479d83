"""Helpers for the UI server tests: a demo workspace copy, a connected client, leak checks.

Processes are found through /proc (Linux): the UI server is a child of the test process, the
driver a child of the server. After a test each must be gone within a bounded wait.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from cardrunner.demo import APP
from tests.support import processes
from tests.support.processes import alive, children

FIXES = Path(__file__).parent / "demo_fixes"
TOOLS = {
    "ui_start",
    "ui_stop",
    "ui_list_elements",
    "ui_click",
    "ui_set_text",
    "ui_read",
    "ui_press",
    "ui_select_row",
    "ui_screenshot",
}


def cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes()).replace(b"\0", b" ").decode()
    except OSError:
        return ""


def ui_servers() -> list[int]:
    """UI server processes started by this test process."""
    return [p for p in children(os.getpid()) if "cardrunner.uiserver" in cmdline(p)]


def wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    """The pids still alive (zombies are not) after waiting up to `seconds` for them to end."""
    return processes.wait_gone(pids, alive, seconds)


def driver_pid(start_text: str) -> int:
    """The driver's pid from ui_start's summary."""
    match = re.search(r"pid (\d+)", start_text)
    assert match, start_text
    return int(match.group(1))


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


class Ui:
    """A connected client with shortcuts: `ok` expects success, `error` expects is_error."""

    def __init__(self, client: Client, server_pid: int) -> None:
        self.client = client
        self.server_pid = server_pid
        self.drivers: list[int] = []

    async def call(self, tool: str, **args: Any) -> Any:
        return await self.client.call_tool(tool, args)

    async def ok(self, tool: str, **args: Any) -> str:
        result = await self.call(tool, **args)
        assert not result.is_error, f"{tool}({args}) failed: {text(result)}"
        return text(result)

    async def error(self, tool: str, **args: Any) -> str:
        result = await self.call(tool, **args)
        assert result.is_error, f"{tool}({args}) should have failed: {text(result)}"
        return text(result)

    async def start(self) -> str:
        summary = await self.ok("ui_start")
        self.drivers.append(driver_pid(summary))
        return summary

    async def fill(self, name: str, quantity: str, price: str) -> None:
        await self.ok("ui_set_text", id="item_name", text=name)
        await self.ok("ui_set_text", id="item_quantity", text=quantity)
        await self.ok("ui_set_text", id="item_price", text=price)


@asynccontextmanager
async def ui_server(
    workspace: Path, run_dir: Path | None = None, app: str = APP, extra: tuple[str, ...] = ()
) -> AsyncIterator[Ui]:
    """The UI server for `app` (default: the demo's) in `workspace`, over stdio; on exit,
    proves that the server and every driver it started are gone."""
    env = {"CARDRUNNER_RUN_DIR": str(run_dir)} if run_dir else {}
    args = ["-m", "cardrunner.uiserver", "--app", app, "--cwd", str(workspace), *extra]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=workspace)
    before = set(ui_servers())
    async with Client(params) as client:
        started = [p for p in ui_servers() if p not in before]
        assert len(started) == 1, started
        ui = Ui(client, started[0])
        yield ui
    left = wait_gone([ui.server_pid, *ui.drivers])
    assert not left, f"still running after the client closed: {left}"
