"""Tests of the invoice arithmetic and input checks (run: python -m pytest tests -q)."""

from decimal import Decimal

import pytest

from invoice.model import (
    InvalidInput,
    Invoice,
    Item,
    money,
    parse_discount,
    parse_item,
    sample_invoice,
)


def test_line_total_is_quantity_times_unit_price():
    assert Item("Notebook", 2, Decimal("12.50")).line_total == Decimal("25.00")


def test_sample_invoice_subtotal_is_90():
    invoice = sample_invoice()
    assert [item.name for item in invoice.items] == ["Notebook", "Pens (pack of 10)", "Desk lamp"]
    assert money(invoice.subtotal()) == "90.00"


def test_empty_invoice_has_zero_totals():
    invoice = Invoice()
    assert money(invoice.subtotal()) == "0.00"
    assert money(invoice.total()) == "0.00"


def test_total_without_discount_is_the_subtotal():
    assert sample_invoice().total() == Decimal("90.00")


def test_discount_amount_is_a_share_of_the_subtotal():
    invoice = sample_invoice()
    invoice.discount_percent = Decimal(10)
    assert money(invoice.discount_amount()) == "9.00"


def test_discount_amount_is_rounded_to_cents():
    invoice = Invoice([Item("Clip", 1, Decimal("0.99"))], discount_percent=Decimal("12.5"))
    assert invoice.discount_amount() == Decimal("0.12")


def test_add_and_remove_change_the_subtotal():
    invoice = sample_invoice()
    invoice.add(Item("Stapler", 2, Decimal("4.50")))
    assert money(invoice.subtotal()) == "99.00"
    removed = invoice.remove(1)
    assert removed.name == "Pens (pack of 10)"
    assert money(invoice.subtotal()) == "84.00"


def test_parse_item_reads_the_three_fields():
    item = parse_item(" Stapler ", "2", "4.50")
    assert item == Item("Stapler", 2, Decimal("4.50"))


def test_parse_item_needs_a_name():
    with pytest.raises(InvalidInput, match="name"):
        parse_item("  ", "1", "1.00")


@pytest.mark.parametrize(
    ("text", "percent"), [("", 0), ("10", 10), (" 12.5 % ", "12.5"), ("100", 100)]
)
def test_parse_discount_accepts_0_to_100(text, percent):
    assert parse_discount(text) == Decimal(percent)


@pytest.mark.parametrize("text", ["-1", "101", "ten", "nan"])
def test_parse_discount_refuses_other_values(text):
    with pytest.raises(InvalidInput, match="0 to 100"):
        parse_discount(text)


def test_money_has_two_decimals():
    assert money(Decimal("81")) == "81.00"
    assert money(Decimal("0.125")) == "0.13"
