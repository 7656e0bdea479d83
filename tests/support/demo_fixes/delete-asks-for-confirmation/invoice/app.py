"""InvoiceApp: a small invoice editor in the terminal, built with Textual.

The screen is a thin layer over `invoice.model`: it turns what the user typed into calls on the
`Invoice` and shows the results. Every control has a stable id, so tests and the UI automation
server can find it: items, item_name, item_quantity, item_price, add, delete, discount,
subtotal, discount_amount, total, message.
"""

from __future__ import annotations

from textual import on
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Header, Input, Label

from invoice.model import InvalidInput, Invoice, money, parse_discount, parse_item, sample_invoice


class ConfirmDelete(ModalScreen[bool]):
    """Asks before an item is deleted; dismisses with True for "Yes"."""

    DEFAULT_CSS = """
    ConfirmDelete { align: center middle; }
    #confirm_dialog {
        width: 50; height: auto; padding: 1 2; border: thick $error; background: $surface;
    }
    #confirm_dialog Horizontal { height: auto; margin-top: 1; }
    #confirm_dialog Button { margin-right: 2; }
    """
    BINDINGS = [("escape", "dismiss(False)", "No")]

    def __init__(self, item_name: str) -> None:
        super().__init__()
        self.item_name = item_name

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm_dialog"):
            yield Label(f'Delete "{self.item_name}"?', id="confirm_message")
            with Horizontal():
                yield Button("Yes", id="confirm_yes", variant="error")
                yield Button("No", id="confirm_no")

    @on(Button.Pressed, "#confirm_yes")
    def yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm_no")
    def no(self) -> None:
        self.dismiss(False)


class InvoiceApp(App[None]):
    """Edit the items of one invoice and see the totals update."""

    TITLE = "Invoice"
    CSS = """
    #items { height: 1fr; }
    #entry, #discount_row { height: auto; }
    #entry Input { width: 1fr; }
    #item_name { width: 2fr; }
    #discount_row Label { padding: 1 1 0 1; }
    #discount { width: 12; }
    #totals { height: auto; padding: 0 1; }
    #totals Label { width: 100%; text-align: right; }
    #total { text-style: bold; }
    #message { color: $error; padding: 0 1; height: 1; }
    """
    BINDINGS = [("ctrl+q", "quit", "Quit")]

    def __init__(self, invoice: Invoice | None = None) -> None:
        super().__init__()
        self.invoice = invoice if invoice is not None else sample_invoice()
        self.selected: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="items", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="entry"):
            yield Input(placeholder="Item", id="item_name")
            yield Input(placeholder="Quantity", id="item_quantity")
            yield Input(placeholder="Unit price", id="item_price")
            yield Button("Add", id="add", variant="primary")
            yield Button("Delete selected", id="delete")
        with Horizontal(id="discount_row"):
            yield Label("Discount %")
            yield Input("0", placeholder="percent", id="discount")
        with Vertical(id="totals"):
            yield Label(id="subtotal")
            yield Label(id="discount_amount")
            yield Label(id="total")
        yield Label("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#items", DataTable)
        table.add_columns("Item", "Quantity", "Unit price", "Line total")
        self.refresh_invoice()

    def refresh_invoice(self) -> None:
        """Show the items and totals of the invoice; forgets the selection."""
        table = self.query_one("#items", DataTable)
        table.clear()
        for item in self.invoice.items:
            table.add_row(
                item.name, str(item.quantity), money(item.unit_price), money(item.line_total)
            )
        self.selected = None
        self.refresh_totals()

    def refresh_totals(self) -> None:
        """Show subtotal, discount and total of the invoice."""
        self.query_one("#subtotal", Label).update(f"Subtotal: {money(self.invoice.subtotal())}")
        discount = money(self.invoice.discount_amount())
        self.query_one("#discount_amount", Label).update(f"Discount: {discount}")
        self.query_one("#total", Label).update(f"Total: {money(self.invoice.total())}")

    def show_message(self, text: str) -> None:
        self.query_one("#message", Label).update(text)

    @on(DataTable.RowSelected, "#items")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        self.selected = event.cursor_row

    @on(Button.Pressed, "#add")
    def add_item(self) -> None:
        ids = ("item_name", "item_quantity", "item_price")
        fields = [self.query_one(f"#{name}", Input) for name in ids]
        try:
            item = parse_item(*(field.value for field in fields))
        except InvalidInput as error:
            self.show_message(str(error))
            return
        self.invoice.add(item)
        for field in fields:
            field.value = ""
        self.show_message("")
        self.refresh_invoice()

    @on(Button.Pressed, "#delete")
    def delete_selected(self) -> None:
        if self.selected is None:
            return
        index = self.selected

        def answered(yes: bool | None) -> None:
            if yes:
                self.invoice.remove(index)
                self.show_message("")
                self.refresh_invoice()

        self.push_screen(ConfirmDelete(self.invoice.items[index].name), answered)

    @on(Input.Changed, "#discount")
    def discount_changed(self, event: Input.Changed) -> None:
        try:
            self.invoice.discount_percent = parse_discount(event.value)
        except InvalidInput as error:
            self.show_message(str(error))
            return
        self.show_message("")
        self.refresh_totals()
