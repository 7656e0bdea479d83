"""The demo: InvoiceApp has exactly the three gaps its cards describe, and each fix kept under
`tests/support/demo_fixes/` closes its gap the way the card's acceptance criteria say, observed through
the UI automation MCP server as the model would observe it."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cardrunner.card.card import load_card
from cardrunner.config.loading import load_settings
from cardrunner.demo import CARDS, WORKSPACE, DemoError, create_workspace
from tests.support.uiserver import FIXES, Ui, ui_server

FIXED_FILES = {
    "total-ignores-the-discount": "invoice/model.py",
    "delete-asks-for-confirmation": "invoice/app.py",
    "validate-quantity-and-price": "invoice/model.py",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return create_workspace(tmp_path / "demo", commit=False)


@pytest.fixture
def invoice(workspace: Path) -> Iterator[tuple[ModuleType, ModuleType]]:
    """`invoice.model` and `invoice.app`, imported from a fresh copy of the workspace."""
    sys.path.insert(0, str(workspace))
    try:
        yield importlib.import_module("invoice.model"), importlib.import_module("invoice.app")
    finally:
        sys.path.remove(str(workspace))
        for name in [n for n in sys.modules if n == "invoice" or n.startswith("invoice.")]:
            del sys.modules[name]


# -- the gaps, in the model ------------------------------------------------------------------


def test_gap_1_total_ignores_the_discount(invoice: tuple[ModuleType, ModuleType]) -> None:
    model, _ = invoice
    sample = model.sample_invoice()
    sample.discount_percent = Decimal(10)
    assert model.money(sample.discount_amount()) == "9.00"
    assert model.money(sample.total()) == "90.00"


def test_gap_3_items_with_invalid_values_are_accepted(
    invoice: tuple[ModuleType, ModuleType],
) -> None:
    model, _ = invoice
    assert model.parse_item("Stapler", "0", "4.50").line_total == 0
    assert model.parse_item("Stapler", "-2", "4.50").line_total == Decimal("-9.00")
    assert model.parse_item("Stapler", "1", "-4.50").unit_price == Decimal("-4.50")
    with pytest.raises(ValueError) as raised:
        model.parse_item("Stapler", "abc", "4.50")
    assert not isinstance(raised.value, model.InvalidInput)  # so the app does not catch it


# -- the gaps, in the running app (Textual's Pilot) ------------------------------------------


def label(app: Any, widget_id: str) -> str:
    return str(app.query_one(f"#{widget_id}").render())


def rows(app: Any) -> list[list[str]]:
    table = app.query_one("#items")
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def click(pilot: Any, selector: str) -> None:
    """Click a button once it takes clicks again: Textual ignores a Button for a moment after
    a press (while it shows the `-active` effect), so a quick second click would be lost."""
    button = pilot.app.query_one(selector)
    for _ in range(100):
        if not button.has_class("-active"):
            break
        await pilot.pause(0.02)
    await pilot.click(selector)


async def test_app_shows_discount_but_total_stays(invoice: tuple[ModuleType, ModuleType]) -> None:
    _, app_module = invoice
    app = app_module.InvoiceApp()
    async with app.run_test(size=(100, 32)) as pilot:
        app.query_one("#discount").value = "10"
        await pilot.pause()
        assert label(app, "discount_amount") == "Discount: 9.00"
        assert label(app, "total") == "Total: 90.00"


async def test_app_deletes_the_selected_row_without_asking(
    invoice: tuple[ModuleType, ModuleType],
) -> None:
    _, app_module = invoice
    app = app_module.InvoiceApp()
    async with app.run_test(size=(100, 32)) as pilot:
        app.query_one("#delete").active_effect_duration = 0  # else it ignores a quick 2nd click
        await click(pilot, "#delete")
        assert len(rows(app)) == 3  # nothing selected: nothing happens
        table = app.query_one("#items")
        table.move_cursor(row=1)
        table.action_select_cursor()
        await pilot.pause()
        await click(pilot, "#delete")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]  # no dialog
        assert [r[0] for r in rows(app)] == ["Notebook", "Desk lamp"]
        assert label(app, "subtotal") == "Subtotal: 75.00"


async def test_app_adds_a_zero_quantity_and_crashes_on_text(
    invoice: tuple[ModuleType, ModuleType],
) -> None:
    _, app_module = invoice
    app = app_module.InvoiceApp()
    with pytest.raises(ValueError, match="invalid literal for int"):
        async with app.run_test(size=(100, 32)) as pilot:
            for widget_id, value in [("item_name", "Stapler"), ("item_price", "4.50")]:
                app.query_one(f"#{widget_id}").value = value
            app.query_one("#item_quantity").value = "0"
            await click(pilot, "#add")
            await pilot.pause()
            assert rows(app)[-1] == ["Stapler", "0", "4.50", "0.00"]
            for widget_id, value in [("item_name", "Pad"), ("item_price", "1")]:
                app.query_one(f"#{widget_id}").value = value
            app.query_one("#item_quantity").value = "abc"
            await click(pilot, "#add")
            await pilot.pause()
    assert app.return_code != 0


# -- the workspace: repository, configuration, cards ------------------------------------------


def test_create_workspace_commits_the_template(tmp_path: Path) -> None:
    dest = create_workspace(tmp_path / "repo")
    git = ["git", "-C", str(dest)]
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout == ""
    files = subprocess.run([*git, "ls-files"], capture_output=True, text=True).stdout.split()
    assert {".gitignore", "cardrunner.toml", "invoice/app.py", "tests/test_model.py"} <= set(files)
    assert set(CARDS) <= set(files)
    assert not any("__pycache__" in f for f in files)
    with pytest.raises(DemoError, match="not empty"):
        create_workspace(dest)


def test_configuration_loads_without_problems() -> None:
    settings, problems = load_settings(WORKSPACE)
    assert problems == []
    assert settings.paths.write == ["invoice", "tests"]
    assert settings.commands.build == ["python", "-m", "compileall", "-q", "invoice"]
    assert settings.commands.test == ["python", "-m", "pytest", "tests", "-q"]
    ui = settings.mcp["ui"]
    assert ui.command == "python" and "invoice.app:InvoiceApp" in ui.args


@pytest.mark.parametrize("card", CARDS)
def test_cards_are_new_with_concrete_criteria(card: str) -> None:
    parsed = load_card(WORKSPACE / card)
    assert parsed.state == "New" and parsed.title
    assert len(parsed.criteria) >= 3
    assert any(any(ch.isdigit() for ch in criterion) for criterion in parsed.criteria)
    assert Path(card).stem in FIXED_FILES


# -- the fixes: small, keep the app's tests green, and show through the UI server -------------


def apply_fix(workspace: Path, card: str) -> Path:
    relative = FIXED_FILES[card]
    fixed = FIXES / card / relative
    target = workspace / relative
    changed = set(target.read_text().splitlines()) ^ set(fixed.read_text().splitlines())
    assert 0 < len(changed) < 60, f"the fix for {card} should be a small diff"
    shutil.copyfile(fixed, target)
    return target


def run_checks(workspace: Path) -> None:
    """The demo's build and test commands, as cardrunner runs them."""
    for argv in (["-m", "compileall", "-q", "invoice"], ["-m", "pytest", "tests", "-q"]):
        done = subprocess.run(
            [sys.executable, *argv], cwd=workspace, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_demo_build_and_tests_pass_with_the_gaps(workspace: Path) -> None:
    run_checks(workspace)


async def check_discount(ui: Ui) -> None:
    await ui.ok("ui_set_text", id="discount", text="10")
    assert await ui.ok("ui_read", id="discount_amount") == "Discount: 9.00"
    assert await ui.ok("ui_read", id="total") == "Total: 81.00"
    await ui.ok("ui_set_text", id="discount", text="25")
    assert await ui.ok("ui_read", id="discount_amount") == "Discount: 22.50"
    assert await ui.ok("ui_read", id="total") == "Total: 67.50"
    assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 90.00"
    await ui.ok("ui_set_text", id="discount", text="")
    assert await ui.ok("ui_read", id="total") == "Total: 90.00"


async def check_confirmation(ui: Ui) -> None:
    assert "dialog" not in await ui.ok("ui_click", id="delete")  # nothing selected
    await ui.ok("ui_select_row", id="items", row=1)
    opened = await ui.ok("ui_click", id="delete")
    assert "A dialog opened" in opened and "confirm_yes  Button" in opened
    assert 'Delete "Pens (pack of 10)"?' in await ui.ok("ui_read", id="confirm_dialog")
    listing = await ui.ok("ui_list_elements")
    assert 'confirm_no  Button  label="No"  enabled  [modal]' in listing.splitlines()
    assert "behind the open dialog" in await ui.error("ui_click", id="add")
    assert "The dialog closed." in await ui.ok("ui_click", id="confirm_no")
    assert "row 1: Pens (pack of 10)" in await ui.ok("ui_read", id="items")
    assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 90.00"
    await ui.ok("ui_click", id="delete")  # the row is still selected
    await ui.ok("ui_click", id="confirm_yes")
    items = await ui.ok("ui_read", id="items")
    assert "Pens" not in items and "row 2" not in items
    assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 75.00"


async def check_validation(ui: Ui) -> None:
    for quantity, price, word in [
        ("0", "4.50", "quantity"),
        ("-2", "4.50", "quantity"),
        ("abc", "4.50", "quantity"),
        ("1", "-4.50", "price"),
        ("1", "abc", "price"),
    ]:
        await ui.fill("Stapler", quantity, price)
        await ui.ok("ui_click", id="add")
        assert word in (await ui.ok("ui_read", id="message")).lower()
        assert "row 3" not in await ui.ok("ui_read", id="items")
        assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 90.00"
    await ui.fill("Stapler", "2", "4.50")
    await ui.ok("ui_click", id="add")
    assert "row 3: Stapler | 2 | 4.50 | 9.00" in await ui.ok("ui_read", id="items")
    assert await ui.ok("ui_read", id="subtotal") == "Subtotal: 99.00"
    assert await ui.ok("ui_read", id="message") == ""


CHECKS = {
    "total-ignores-the-discount": check_discount,
    "delete-asks-for-confirmation": check_confirmation,
    "validate-quantity-and-price": check_validation,
}


@pytest.mark.parametrize("card", list(FIXED_FILES))
async def test_fix_is_observable_through_the_ui_server(workspace: Path, card: str) -> None:
    apply_fix(workspace, card)
    run_checks(workspace)
    async with ui_server(workspace) as ui:
        await ui.start()
        await CHECKS[card](ui)
