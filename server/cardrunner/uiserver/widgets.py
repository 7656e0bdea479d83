"""What the driver knows about Textual widgets: finding them by id, describing and reading them.

Runs inside the driver process (it imports Textual). Only widgets with an id are addressable: ids
are the stable names an app gives its controls, like AutomationIds in Windows UI Automation. All
screens on the stack are searched, so a modal dialog's widgets are found as the ones it
covers; the widgets of a modal screen are marked `[modal]` and the covered ones `[behind dialog]`.
"""

from __future__ import annotations

import difflib
import io
import json
from collections.abc import Iterator

from rich.console import Console
from textual.app import App
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Select, Static, Switch, TextArea
from textual.widgets._toggle_button import ToggleButton


class UnknownId(LookupError):
    """No widget has this id; the message names the closest ids."""


def addressable(app: App[object], under: Widget | None = None) -> Iterator[Widget]:
    """Every widget with an id, screen by screen from the bottom of the stack.

    Ids starting with an underscore are Textual's own (the default screen is `_default`)."""
    roots: list[Widget] = [under] if under is not None else list(app.screen_stack)
    for root in roots:
        for widget in root.walk_children(Widget, with_self=True):
            if widget.id is not None and not widget.id.startswith("_"):
                yield widget


def find(app: App[object], widget_id: str) -> Widget:
    """The widget with this id (the one on the topmost screen if several screens share it)."""
    widget_id = widget_id.strip().lstrip("#")
    matches = [w for w in addressable(app) if w.id == widget_id]
    if matches:
        return matches[-1]
    ids = sorted({w.id for w in addressable(app) if w.id is not None})
    close = difflib.get_close_matches(widget_id, ids, n=5, cutoff=0.4)
    hint = f"Closest ids: {', '.join(close)}." if close else f"Known ids: {', '.join(ids[:40])}."
    raise UnknownId(f"No element with id '{widget_id}'. {hint}")


def kind(widget: Widget) -> str:
    return type(widget).__name__


def placement(widget: Widget) -> str:
    """'[modal]' for a dialog's widgets, '[behind dialog]' for covered ones, else ''."""
    screen = widget if isinstance(widget, Screen) else widget.screen
    if isinstance(screen, ModalScreen):
        return "[modal]"
    if screen is not screen.app.screen:
        return "[behind dialog]"
    return ""


def text_of(widget: Widget) -> str:
    """The plain text a static widget shows."""
    try:
        return str(widget.render()).strip()
    except Exception:  # a widget that cannot render outside its normal paint cycle
        return ""


def label_and_value(widget: Widget) -> tuple[str | None, str | None]:
    """The label (caption, placeholder, columns) and current value of a widget, if it has them."""
    match widget:
        case Button():
            return str(widget.label), None
        case Input():
            return widget.placeholder or None, widget.value
        case TextArea():
            return None, widget.text
        case DataTable():
            columns = ", ".join(str(c.label) for c in widget.ordered_columns)
            cursor = f", cursor on row {widget.cursor_row}" if widget.row_count else ""
            return columns, f"{widget.row_count} rows{cursor}"
        case ToggleButton():
            return str(widget.label), str(widget.value)
        case Switch():
            return None, str(widget.value)
        case Select():
            return None, "" if widget.is_blank() else str(widget.value)
        case Static():
            return None, text_of(widget)
        case _:
            return None, None


def describe(widget: Widget) -> str:
    """One line: id, type, label, value, enabled, and where it sits."""
    label, value = label_and_value(widget)
    parts = [widget.id or "", kind(widget)]
    if label is not None:
        parts.append(f"label={json.dumps(label, ensure_ascii=False)}")
    if value is not None:
        parts.append(f"value={json.dumps(value, ensure_ascii=False)}")
    parts.append("disabled" if widget.is_disabled else "enabled")
    if not widget.display or not widget.visible:
        parts.append("hidden")
    if mark := placement(widget):
        parts.append(mark)
    return "  ".join(parts)


def cell(value: object) -> str:
    return str(value).replace("\n", " ")


def table_lines(table: DataTable[object]) -> list[str]:
    """A DataTable as text: the columns, then one line per row with its index."""
    lines = ["columns: " + " | ".join(str(c.label) for c in table.ordered_columns)]
    for index in range(table.row_count):
        lines.append(f"row {index}: " + " | ".join(cell(v) for v in table.get_row_at(index)))
    if not table.row_count:
        lines.append("(no rows)")
    else:
        lines.append(f"(cursor on row {table.cursor_row})")
    return lines


def read(widget: Widget) -> str:
    """What the widget shows: a table's rows, a field's value, a label's text; for a container,
    the readable widgets inside it, one `id: text` line each."""
    if isinstance(widget, DataTable):
        return "\n".join(table_lines(widget))
    label, value = label_and_value(widget)
    if value is not None:
        return value
    if label is not None:
        return label
    inner = []
    for child in addressable(widget.app, under=widget):
        if child is widget:
            continue
        child_label, child_value = label_and_value(child)
        shown = child_value if child_value is not None else child_label
        if shown is not None:
            inner.append(f"{child.id}: {shown}")
    return "\n".join(inner) if inner else f"({kind(widget)} '{widget.id}' shows no text)"


def screen_text(app: App[object]) -> str:
    """The screen as plain text, exactly as rendered (dialogs included)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, color_system=None
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)
