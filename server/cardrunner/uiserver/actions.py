"""The driver's commands: one async function per UI tool, acting on the app through its Pilot.

Each command acts the way a user would (a real mouse click on the widget, key presses) and then
waits for the app to settle (`pilot.pause()` waits until every pending message is handled),
never for a fixed time. Interacting with a widget that a modal dialog covers is refused, as it
would be for a user. A command raises `ActionError` for anything the model should correct.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, TextArea

from cardrunner.uiserver import widgets
from cardrunner.uiserver.protocol import Command

SCREENSHOT_DIR_ENV = "CARDRUNNER_RUN_DIR"
RELEASE_POLLS = 150
RELEASE_POLL_SECONDS = 0.02

Action = Callable[[Pilot[Any], dict[str, Any]], Awaitable[str]]


class ActionError(Exception):
    """A command that cannot be done as asked; the message tells the model why."""


def _find(app: App[Any], args: dict[str, Any]) -> Widget:
    widget_id = args.get("id")
    if not isinstance(widget_id, str) or not widget_id.strip():
        raise ActionError("Give the element's id, e.g. id='add' (see ui_list_elements).")
    try:
        return widgets.find(app, widget_id)
    except widgets.UnknownId as error:
        raise ActionError(str(error)) from None


def _usable(widget: Widget) -> None:
    """Refuse what a user could not do: act on a covered, hidden or disabled widget."""
    app = widget.app
    if widget.screen is not app.screen:
        open_ids = [w.id for w in widgets.addressable(app, under=app.screen) if w.id]
        raise ActionError(
            f"'{widget.id}' is behind the open dialog; answer the dialog first "
            f"(its elements: {', '.join(open_ids) or 'none with ids'})."
        )
    if widget.is_disabled:
        raise ActionError(f"'{widget.id}' is disabled.")
    if not widget.display or not widget.visible:
        raise ActionError(f"'{widget.id}' is hidden.")


def dialog_note(app: App[Any], was_modal: bool) -> str:
    """A line about a dialog that opened or closed during the action, else ''."""
    is_modal = isinstance(app.screen, ModalScreen)
    if is_modal and not was_modal:
        lines = [widgets.describe(w) for w in widgets.addressable(app, under=app.screen)]
        return "\nA dialog opened:\n" + "\n".join(lines)
    if was_modal and not is_modal:
        return "\nThe dialog closed."
    return ""


async def list_elements(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    under = args.get("under")
    root = _find(pilot.app, {"id": under}) if under else None
    lines = [widgets.describe(w) for w in widgets.addressable(pilot.app, under=root)]
    return "\n".join(lines) if lines else "(no elements with ids)"


async def _until_released(pilot: Pilot[Any], widget: Widget) -> None:
    """Wait (bounded) while a Button shows its press effect: it ignores clicks until then."""
    for _ in range(RELEASE_POLLS):
        if not (isinstance(widget, Button) and widget.has_class("-active")):
            return
        await pilot.pause(RELEASE_POLL_SECONDS)


async def click(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    widget = _find(pilot.app, args)
    _usable(widget)
    widget.scroll_visible(animate=False, immediate=True)
    await pilot.pause()
    await _until_released(pilot, widget)
    was_modal = isinstance(pilot.app.screen, ModalScreen)
    width, height = widget.region.size
    if not width or not height:
        raise ActionError(f"'{widget.id}' is not on the screen (zero size).")
    landed = await pilot.click(widget, offset=(width // 2, height // 2))
    await pilot.pause()
    if not landed:
        raise ActionError(f"The click on '{widget.id}' hit another widget that covers it.")
    return f"Clicked '{widget.id}'." + dialog_note(pilot.app, was_modal)


async def set_text(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    widget = _find(pilot.app, args)
    _usable(widget)
    text = args.get("text")
    if not isinstance(text, str):
        raise ActionError("Give the new text as a string.")
    if isinstance(widget, Input):
        widget.value = text
    elif isinstance(widget, TextArea):
        widget.load_text(text)
    else:
        raise ActionError(f"'{widget.id}' is a {widgets.kind(widget)}, not a text field.")
    widget.focus()
    await pilot.pause()
    return f"'{widget.id}' now contains {text!r}."


async def read(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    return widgets.read(_find(pilot.app, args))


def _keys(value: object) -> list[str]:
    if isinstance(value, str):
        keys = value.split()
    elif isinstance(value, list) and all(isinstance(k, str) for k in value):
        keys = [k.strip() for k in value if k.strip()]
    else:
        keys = []
    if not keys:
        raise ActionError("Give keys as a list like ['tab', 'enter'] or a string like 'enter'.")
    return keys


async def press(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    keys = _keys(args.get("keys"))
    was_modal = isinstance(pilot.app.screen, ModalScreen)
    await pilot.press(*keys)
    await pilot.pause()
    focused = pilot.app.focused
    where = f" Focus is on '{focused.id}'." if focused is not None and focused.id else ""
    return f"Pressed {', '.join(keys)}." + where + dialog_note(pilot.app, was_modal)


async def select_row(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    table = _find(pilot.app, args)
    if not isinstance(table, DataTable):
        raise ActionError(f"'{table.id}' is a {widgets.kind(table)}, not a DataTable.")
    _usable(table)
    row = args.get("row")
    if not isinstance(row, int) or not 0 <= row < table.row_count:
        raise ActionError(
            f"Row must be from 0 to {table.row_count - 1} ('{table.id}' has "
            f"{table.row_count} rows; ui_read shows them)."
        )
    was_modal = isinstance(pilot.app.screen, ModalScreen)
    table.focus()
    table.move_cursor(row=row, animate=False)
    await pilot.pause()
    table.action_select_cursor()
    await pilot.pause()
    cells = " | ".join(widgets.cell(v) for v in table.get_row_at(row))
    return f"Selected row {row} of '{table.id}': {cells}" + dialog_note(pilot.app, was_modal)


def screenshot_dir() -> Path:
    """The run's folder if the runner set one, else .cardrunner/screenshots here."""
    run_dir = os.environ.get(SCREENSHOT_DIR_ENV)
    return Path(run_dir) if run_dir else Path.cwd() / ".cardrunner" / "screenshots"


def save_screenshot(app: App[Any], name: object) -> str:
    """Write the SVG into the screenshot folder, numbered in order; returns its absolute path."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", str(name or "screen")).strip("-")[:60] or "screen"
    folder = screenshot_dir().absolute()
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("*.svg"))) + 1
    return app.save_screenshot(f"{number:02d}-{slug}.svg", str(folder))


async def screenshot(pilot: Pilot[Any], args: dict[str, Any]) -> str:
    await pilot.pause()
    path = save_screenshot(pilot.app, args.get("name"))
    return f"Saved {path}\n\n{widgets.screen_text(pilot.app)}"


ACTIONS: dict[Command, Action] = {
    "list": list_elements,
    "click": click,
    "set_text": set_text,
    "read": read,
    "press": press,
    "select_row": select_row,
    "screenshot": screenshot,
}
