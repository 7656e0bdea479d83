"""The UI automation MCP server: tools that drive a Textual app by widget id, like a user would.

The model starts the app (`ui_start`), looks at its elements (`ui_list_elements`), types, clicks,
presses keys, selects table rows, reads values back and takes screenshots as evidence. The app
runs headless in a driver process (see `driver.py`) that is imported fresh on every start, so a
restart after an edit shows the new code. Results are plain text; errors are `is_error` results
whose message says what to do next (an unknown id lists the closest ids).

`mcp` is imported inside `build_server`, so importing this module stays cheap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardrunner.uiserver.child import AppChild, ChildError
from cardrunner.uiserver.protocol import Command, Request

if TYPE_CHECKING:
    from mcp.server import MCPServer

START_TIMEOUT_SECONDS = 60.0
NOT_RUNNING = "The app is not running; call ui_start first."

DESCRIPTIONS = {
    "ui_start": "Start the app headless (restarts it if running; loads the current code). "
    "Returns a summary with the element ids, or the traceback if the app fails to start.",
    "ui_stop": "Stop the app. Do this before editing its code; ui_start loads the new code.",
    "ui_list_elements": "List the app's elements that have an id, one line each: id, type, "
    "label, value, enabled/disabled; [modal] marks an open dialog's elements. `under`: only "
    "inside this container id.",
    "ui_click": "Click the element with this id (a button, a table, a field), like a mouse click.",
    "ui_set_text": "Replace the whole text of an input field with `text`.",
    "ui_read": "Read what an element shows: a label's text, an input's value, a button's label, "
    "a table's rows (row numbers from 0), or the texts inside a container or dialog.",
    "ui_press": "Press keys on the focused element, e.g. ['tab', 'enter'] or 'escape'. Key "
    "names as in Textual: enter, escape, tab, up, down, space, ctrl+q, a, b, ...",
    "ui_select_row": "Select a row of a DataTable (row numbers from 0, as ui_read shows them), "
    "like clicking it. Needed before actions on 'the selected row'.",
    "ui_screenshot": "Save a screenshot (SVG) as evidence and return its path and the screen as "
    "text. `name` becomes part of the file name, e.g. 'before' or 'after'.",
}


@dataclass
class UiSession:
    """At most one running app, and the lock that keeps its commands in order."""

    app: str
    cwd: Path
    timeout: float
    child: AppChild | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def start(self) -> str:
        async with self.lock:
            note = ""
            if self.child is not None:
                if self.child.alive:
                    note = "The app was running; it was stopped and started again.\n"
                await self.child.stop()
                self.child = None
            self.child, summary = await AppChild.start(self.app, self.cwd, START_TIMEOUT_SECONDS)
            return note + summary

    async def stop(self) -> str:
        async with self.lock:
            if self.child is None:
                return "The app was not running."
            code = await self.child.stop()
            self.child = None
            return f"The app was stopped (exit code {code})."

    async def call(self, command: Command, **args: Any) -> str:
        """Run one driver command; raise ToolError for anything the model should see as error."""
        from mcp.server.mcpserver.exceptions import ToolError

        async with self.lock:
            if self.child is None or not self.child.alive:
                self.child = None
                raise ToolError(NOT_RUNNING)
            try:
                request = Request(id=0, command=command, args=args)
                reply = await self.child.request(request, self.timeout)
            except ChildError as error:
                self.child = None
                raise ToolError(str(error)) from None
            if reply.ended:
                self.child = None
            if not reply.ok:
                raise ToolError(reply.text)
            return reply.text

    def kill_now(self) -> None:
        if self.child is not None:
            self.child.kill_now()


def build_server(session: UiSession) -> MCPServer[Any]:
    """An MCPServer with the nine ui_* tools bound to `session`; results are plain text."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server: MCPServer[Any] = MCPServer(
        "ui",
        log_level="WARNING",
        instructions=(
            f"Drives the Textual app {session.app} headlessly by element id. Call ui_start "
            "first, ui_list_elements to see the ids, and ui_stop before changing the app's code "
            "(ui_start again loads the new code)."
        ),
    )

    async def ui_start() -> str:
        try:
            return await session.start()
        except ChildError as error:
            raise ToolError(str(error)) from None

    async def ui_stop() -> str:
        return await session.stop()

    async def ui_list_elements(under: str | None = None) -> str:
        return await session.call("list", under=under)

    async def ui_click(id: str) -> str:
        return await session.call("click", id=id)

    async def ui_set_text(id: str, text: str) -> str:
        return await session.call("set_text", id=id, text=text)

    async def ui_read(id: str) -> str:
        return await session.call("read", id=id)

    async def ui_press(keys: list[str] | str) -> str:
        return await session.call("press", keys=keys)

    async def ui_select_row(id: str, row: int) -> str:
        return await session.call("select_row", id=id, row=row)

    async def ui_screenshot(name: str | None = None) -> str:
        return await session.call("screenshot", name=name)

    tools: list[Callable[..., Awaitable[str]]] = [ui_start, ui_stop, ui_list_elements, ui_click]
    tools += [ui_set_text, ui_read, ui_press, ui_select_row, ui_screenshot]
    for fn in tools:
        server.add_tool(fn, description=DESCRIPTIONS[fn.__name__], structured_output=False)
    return server
