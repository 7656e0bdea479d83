"""Tests of the screen, driven headless through Textual's Pilot (no terminal needed)."""

import asyncio

from textual.widgets import DataTable, Input, Label

from invoice.app import InvoiceApp


def run(scenario):
    """Run `scenario(app, pilot)` against a fresh app and return what it returns."""

    async def main():
        app = InvoiceApp()
        async with app.run_test(size=(100, 32)) as pilot:
            await pilot.pause()
            return await scenario(app, pilot)

    return asyncio.run(main())


def text(app, widget_id):
    return str(app.query_one(f"#{widget_id}", Label).render())


def test_starts_with_the_sample_items_and_totals():
    async def scenario(app, pilot):
        return (
            app.query_one("#items", DataTable).row_count,
            text(app, "subtotal"),
            text(app, "total"),
        )

    assert run(scenario) == (3, "Subtotal: 90.00", "Total: 90.00")


def test_adding_an_item_updates_the_table_and_subtotal():
    async def scenario(app, pilot):
        for widget_id, value in [
            ("item_name", "Stapler"),
            ("item_quantity", "2"),
            ("item_price", "4.50"),
        ]:
            app.query_one(f"#{widget_id}", Input).value = value
        await pilot.click("#add")
        await pilot.pause()
        table = app.query_one("#items", DataTable)
        return table.get_row_at(table.row_count - 1), text(app, "subtotal")

    assert run(scenario) == (["Stapler", "2", "4.50", "9.00"], "Subtotal: 99.00")


def test_adding_without_a_name_shows_a_message():
    async def scenario(app, pilot):
        await pilot.click("#add")
        await pilot.pause()
        return app.query_one("#items", DataTable).row_count, text(app, "message")

    assert run(scenario) == (3, "Enter a name for the item.")


def test_discount_shows_the_discount_amount():
    async def scenario(app, pilot):
        app.query_one("#discount", Input).value = "10"
        await pilot.pause()
        return text(app, "discount_amount")

    assert run(scenario) == "Discount: 9.00"


def test_invalid_discount_shows_a_message():
    async def scenario(app, pilot):
        app.query_one("#discount", Input).value = "150"
        await pilot.pause()
        return text(app, "message")

    assert run(scenario) == "The discount must be a number from 0 to 100."
