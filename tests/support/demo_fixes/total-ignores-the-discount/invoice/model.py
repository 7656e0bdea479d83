"""The invoice's arithmetic and input checks, free of any user interface.

Everything the screen shows is computed here, so it can be tested without starting the app.
Money is kept as `Decimal` and rounded to cents only for display and for the discount amount.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")


class InvalidInput(ValueError):
    """A value typed by the user that cannot be used; the message is shown in the app as is."""


@dataclass(frozen=True)
class Item:
    """One line of the invoice."""

    name: str
    quantity: int
    unit_price: Decimal

    @property
    def line_total(self) -> Decimal:
        return self.quantity * self.unit_price


@dataclass
class Invoice:
    """The items and the discount, in percent, applied to their sum."""

    items: list[Item] = field(default_factory=list)
    discount_percent: Decimal = Decimal(0)

    def add(self, item: Item) -> None:
        self.items.append(item)

    def remove(self, index: int) -> Item:
        return self.items.pop(index)

    def subtotal(self) -> Decimal:
        return sum((item.line_total for item in self.items), Decimal(0))

    def discount_amount(self) -> Decimal:
        return (self.subtotal() * self.discount_percent / 100).quantize(CENT, ROUND_HALF_UP)

    def total(self) -> Decimal:
        return self.subtotal() - self.discount_amount()


def money(value: Decimal) -> str:
    """Format an amount the way the app shows it: two decimals, e.g. 81.00."""
    return f"{value.quantize(CENT, ROUND_HALF_UP):.2f}"


def parse_item(name: str, quantity: str, unit_price: str) -> Item:
    """Turn the three entry fields into an item, or raise InvalidInput with a message."""
    name = name.strip()
    if not name:
        raise InvalidInput("Enter a name for the item.")
    return Item(name, int(quantity), Decimal(unit_price.strip()))


def parse_discount(text: str) -> Decimal:
    """The discount field: empty means 0; otherwise a number from 0 to 100."""
    text = text.strip().rstrip("%").strip()
    if not text:
        return Decimal(0)
    try:
        percent = Decimal(text)
    except InvalidOperation:
        raise InvalidInput("The discount must be a number from 0 to 100.") from None
    if not percent.is_finite() or not 0 <= percent <= 100:
        raise InvalidInput("The discount must be a number from 0 to 100.")
    return percent


def sample_invoice() -> Invoice:
    """The items the app starts with: 25.00 + 15.00 + 50.00 = 90.00."""
    return Invoice(
        items=[
            Item("Notebook", 2, Decimal("12.50")),
            Item("Pens (pack of 10)", 3, Decimal("5.00")),
            Item("Desk lamp", 1, Decimal("50.00")),
        ]
    )
