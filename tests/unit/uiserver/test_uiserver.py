"""The UI automation MCP server, end to end: the real `mcp` client, the real server over stdio
(and Streamable HTTP), the real driver process and the demo app in a copy of its workspace."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client

from cardrunner.demo import APP, create_workspace
from tests.support.uiserver import TOOLS, driver_pid, text, ui_server, ui_servers, wait_gone


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return create_workspace(tmp_path / "demo", commit=False)


async def test_lists_the_nine_tools_and_needs_a_start(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        tools = (await ui.client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        assert all(t.description for t in tools)
        assert "call ui_start first" in await ui.error("ui_read", id="total")
        assert "not running" in await ui.ok("ui_stop")


async def test_list_set_text_click_and_read(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        summary = await ui.start()
        assert "items, " in summary and "discount" in summary
        listing = (await ui.ok("ui_list_elements")).splitlines()
        assert 'add  Button  label="Add"  enabled' in listing
        assert 'total  Label  value="Total: 90.00"  enabled' in listing
        assert any(line.startswith("items  DataTable  ") and "3 rows" in line for line in listing)
        inside = await ui.ok("ui_list_elements", under="totals")
        assert [line.split()[0] for line in inside.splitlines()] == [
            "totals",
            "subtotal",
            "discount_amount",
            "total",
        ]

        assert "'10'" in await ui.ok("ui_set_text", id="discount", text="10")
        assert await ui.ok("ui_read", id="discount") == "10"
        assert await ui.ok("ui_read", id="discount_amount") == "Discount: 9.00"
        assert await ui.ok("ui_read", id="total") == "Total: 90.00"  # gap 1: discount ignored

        await ui.fill("Stapler", "2", "4.50")
        assert await ui.ok("ui_click", id="add") == "Clicked 'add'."
        rows = (await ui.ok("ui_read", id="items")).splitlines()
        assert rows[0] == "columns: Item | Quantity | Unit price | Line total"
        assert rows[4] == "row 3: Stapler | 2 | 4.50 | 9.00"
        assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 99.00"
        assert await ui.ok("ui_read", id="add") == "Add"
        assert await ui.ok("ui_read", id="item_name") == ""


COUNTER_APP = """
from textual.app import App
from textual.widgets import Button, Label


class CounterApp(App):
    def compose(self):
        button = Button("Count", id="count")
        button.active_effect_duration = 1.0  # clicks during the press effect are ignored
        yield button
        yield Label("0", id="clicks")

    def on_button_pressed(self):
        print("a stray print must not reach the MCP channel")
        label = self.query_one("#clicks")
        label.update(str(int(str(label.render())) + 1))
"""


async def test_any_textual_app_and_quick_clicks_both_count(tmp_path: Path) -> None:
    (tmp_path / "counter.py").write_text(COUNTER_APP)
    async with ui_server(tmp_path, app="counter:CounterApp") as ui:
        assert "Elements with ids: count, clicks" in await ui.start()
        await ui.ok("ui_click", id="count")
        await ui.ok("ui_click", id="count")
        assert await ui.ok("ui_read", id="clicks") == "2"


TROUBLE_APP = """
import time

from textual.app import App
from textual.widgets import Button


class HangApp(App):
    def compose(self):
        yield Button("Hang", id="hang")

    def on_button_pressed(self):
        time.sleep(600)


class MountCrashApp(App):
    def on_mount(self):
        raise RuntimeError("boom in on_mount")


class QuitApp(App):
    def on_mount(self):
        self.exit()
"""


async def test_a_hanging_app_is_killed_after_the_timeout(tmp_path: Path) -> None:
    (tmp_path / "trouble.py").write_text(TROUBLE_APP)
    async with ui_server(tmp_path, app="trouble:HangApp", extra=("--timeout", "2")) as ui:
        hung = driver_pid(await ui.start())
        message = await ui.error("ui_click", id="hang")
        assert "did not answer 'click' within 2 s" in message and "stopped" in message
        assert wait_gone([hung]) == []
        assert "call ui_start first" in await ui.error("ui_read", id="hang")


@pytest.mark.parametrize(
    ("app", "expected"),
    [("MountCrashApp", "RuntimeError: boom in on_mount"), ("QuitApp", "The app exited")],
)
async def test_an_app_that_ends_during_start_up(tmp_path: Path, app: str, expected: str) -> None:
    (tmp_path / "trouble.py").write_text(TROUBLE_APP)
    async with ui_server(tmp_path, app=f"trouble:{app}") as ui:
        message = await ui.error("ui_start")
        assert message.startswith("Error executing tool ui_start: The app failed to start:")
        assert expected in message


async def test_select_row_then_delete_removes_it_at_once(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        await ui.start()
        selected = await ui.ok("ui_select_row", id="items", row=1)
        assert selected == "Selected row 1 of 'items': Pens (pack of 10) | 3 | 5.00 | 15.00"
        clicked = await ui.ok("ui_click", id="delete")
        assert "dialog" not in clicked  # gap 2: no confirmation
        rows = await ui.ok("ui_read", id="items")
        assert "Pens" not in rows and "row 1: Desk lamp" in rows
        assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 75.00"
        assert "from 0 to 1" in await ui.error("ui_select_row", id="items", row=5)
        assert "not a DataTable" in await ui.error("ui_select_row", id="total", row=0)


def is_svg(path: Path) -> bool:
    return path.read_text().lstrip().startswith("<svg")


async def test_screenshot_saves_svg_and_returns_the_screen_as_text(
    workspace: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    async with ui_server(workspace, run_dir) as ui:
        await ui.start()
        shot = await ui.ok("ui_screenshot", name="before fix")
        first_line, _, screen = shot.partition("\n")
        path = Path(first_line.removeprefix("Saved "))
        assert path == run_dir / "01-before-fix.svg"
        assert is_svg(path)
        assert "Subtotal: 90.00" in screen and "Desk lamp" in screen
        second = (await ui.ok("ui_screenshot")).splitlines()[0]
        assert second == f"Saved {run_dir / '02-screen.svg'}"


async def test_screenshot_defaults_to_the_workspace(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        await ui.start()
        await ui.ok("ui_screenshot", name="x")
        assert (workspace / ".cardrunner" / "screenshots" / "01-x.svg").is_file()


async def test_unknown_id_lists_the_closest_ids_and_press_moves_focus(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        await ui.start()
        message = await ui.error("ui_click", id="totl")
        assert "No element with id 'totl'" in message and "total" in message
        assert "delete" in await ui.error("ui_read", id="delet")
        assert "not a text field" in await ui.error("ui_set_text", id="total", text="1")

        await ui.ok("ui_set_text", id="item_name", text="x")
        assert "Focus is on 'item_quantity'" in await ui.ok("ui_press", keys="tab")
        assert "Focus is on 'item_price'" in await ui.ok("ui_press", keys=["tab"])
        assert "list like" in await ui.error("ui_press", keys=[])
        assert "The app exited" in await ui.ok("ui_press", keys="ctrl+q")
        assert "call ui_start first" in await ui.error("ui_read", id="total")


async def test_restart_loads_the_changed_code(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        first = driver_pid(await ui.start())
        assert "row 0: Notebook" in await ui.ok("ui_read", id="items")
        assert "stopped" in await ui.ok("ui_stop")
        assert wait_gone([first]) == []
        model = workspace / "invoice" / "model.py"
        model.write_text(model.read_text().replace('"Notebook"', '"Sketchbook"'))
        await ui.start()
        assert "row 0: Sketchbook" in await ui.ok("ui_read", id="items")
        again = await ui.start()  # ui_start on a running app restarts it
        assert again.startswith("The app was running; it was stopped and started again.")


async def test_a_crash_is_an_error_with_the_traceback(workspace: Path) -> None:
    async with ui_server(workspace) as ui:
        crashed = driver_pid(await ui.start())
        await ui.fill("Stapler", "abc", "4.50")
        message = await ui.error("ui_click", id="add")
        assert "The app crashed" in message
        assert "ValueError: invalid literal for int()" in message and "parse_item" in message
        assert wait_gone([crashed]) == []
        assert "call ui_start first" in await ui.error("ui_read", id="items")
        await ui.start()
        assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 90.00"


async def test_a_broken_app_fails_to_start_with_its_traceback(workspace: Path) -> None:
    app = workspace / "invoice" / "app.py"
    app.write_text(app.read_text().replace("def compose(self)", "def compose(self"))
    async with ui_server(workspace) as ui:
        message = await ui.error("ui_start")
        assert "failed to start" in message and "SyntaxError" in message
        assert "not running" in await ui.ok("ui_stop")


async def test_sigterm_to_the_server_kills_the_app(workspace: Path) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the connection dies with the server
        async with ui_server(workspace) as ui:
            driver = driver_pid(await ui.start())
            os.kill(ui.server_pid, signal.SIGTERM)
            assert wait_gone([ui.server_pid, driver]) == []
            await ui.call("ui_read", id="total")
    assert ui_servers() == []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the server did not listen on {port} within {seconds} s")


def start_http_server(workspace: Path, port: int) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "cardrunner.uiserver", "--app", APP, "--cwd", str(workspace)]
    return subprocess.Popen([*argv, "--http", str(port)], stderr=subprocess.PIPE)


async def test_streamable_http_and_sigterm(workspace: Path) -> None:
    port = free_port()
    process = start_http_server(workspace, port)
    try:
        wait_listening(port, process)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            started = await client.call_tool("ui_start", {})
            assert not started.is_error, text(started)
            driver = driver_pid(text(started))
            total = await client.call_tool("ui_read", {"id": "total"})
            assert text(total) == "Total: 90.00"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        assert wait_gone([driver]) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=15)
