"""Write the demo's three transcripts (server/cardrunner/demo/transcripts/*.json).

A transcript is the model's side of a run: which tools it calls, with which arguments, and what
it says. The tool results are produced live when it is played, so playing a transcript really
fixes the app; each step that reports evidence `expect`s the values it reports to be in the tool
results it answers, so if the code no longer fits, the replay fails honestly instead of lying.

The fixes are the files kept under tests/support/demo_fixes/ (the UI-server tests check them). Run
`python scripts/make_demo_transcripts.py` after changing the demo app, its tests or the fixes.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
from pathlib import Path
from typing import Any

from cardrunner.agent.toolpool import ToolContext
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard

REPO = Path(__file__).resolve().parent.parent
WORKSPACE = REPO / "server/cardrunner/demo/workspace"
FIXES = REPO / "tests/support/demo_fixes"
OUT = REPO / "server/cardrunner/demo/transcripts"


def use(tool: str, call: str | None = None, **args: Any) -> dict[str, Any]:
    """A tool call; `call` fixes its tool_use id, so evidence can cite it."""
    block: dict[str, Any] = {"type": "tool_use", "name": tool, "input": args}
    if call:
        block["id"] = call
    return block


def ui(tool: str, call: str | None = None, **args: Any) -> dict[str, Any]:
    return use(f"mcp__ui__ui_{tool}", call, **args)


def step(
    *blocks: dict[str, Any], think: str = "", say: str = "", expect: list[str] | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if think:
        content.append({"type": "thinking", "thinking": think})
    if say:
        content.append({"type": "text", "text": say})
    content += blocks
    out: dict[str, Any] = {"content": content, "stop_reason": "tool_use"}
    if expect:
        out["expect"] = expect
    return out


def done(text: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text + "\nRESULT: done"}],
        "stop_reason": "end_turn",
    }


def report(number: int, evidence: str, cites: list[tuple[str, str]]) -> dict[str, Any]:
    """report_criterion on the card's criterion `number` (from 1) citing (call id, quote) pairs;
    the replay checks each quote is in the cited call's result (and the runner checks it
    again), so a stale transcript fails honestly."""
    return step(
        use(
            "report_criterion",
            index=number,
            passed=True,
            evidence=evidence,
            cites=[{"call": call, "quote": quote} for call, quote in cites],
        )
    )


def with_test(test: str) -> str:
    return (WORKSPACE / "tests/test_model.py").read_text() + "\n\n" + test.strip() + "\n"


def fix(card: str, path: str) -> str:
    return (FIXES / card / path).read_text()


def edits(old: str, new: str) -> list[list[str]]:
    """[old, new] replacements (each `old` unique in the file) that turn `old` into `new`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        ctx = 1
        while True:
            lo, hi = max(0, i1 - ctx), min(len(a), i2 + ctx)
            before = "".join(a[lo:hi])
            if (before and old.count(before) == 1) or (lo == 0 and hi == len(a)):
                break
            ctx += 1
        out.append([before, "".join(a[lo:i1]) + "".join(b[j1:j2]) + "".join(a[i2:hi])])
    text = old
    for before, after in out:
        assert text.count(before) == 1, before
        text = text.replace(before, after)
    return out if text == new else [[old, new]]


def write(path: str, new: str) -> dict[str, Any]:
    """write_file as a model does it: the file as read, changed where the fix changes it."""
    return use("write_file", path=path, edit=edits((WORKSPACE / path).read_text(), new))


def reads(path: str) -> list[dict[str, Any]]:
    """read_file calls that together show the whole file (a long one comes in pages)."""
    tool = next(
        t for t in file_tools(PathGuard(WORKSPACE, ["."], ["invoice"])) if t.name == "read_file"
    )
    calls, start = [use("read_file", path=path)], None
    while True:
        args = {"path": path} if start is None else {"path": path, "start_line": start}
        result = asyncio.run(tool.call(args, ToolContext(0, lambda e: None))).text
        more = re.search(r"start_line=(\d+) to read on\]$", result)
        if not more:
            return calls
        start = int(more.group(1))
        calls.append(use("read_file", path=path, start_line=start))


def total_card() -> list[dict[str, Any]]:
    test = with_test("""
def test_total_subtracts_the_discount():
    invoice = sample_invoice()
    invoice.discount_percent = Decimal("10")
    assert money(invoice.total()) == "81.00"
""")
    return [
        step(use("list_files", path="."), think="Find the code that computes the total."),
        step(use("read_file", path="invoice/model.py"), use("read_file", path="invoice/app.py")),
        step(ui("start"), say="Reproduce first: 10 % off the sample items."),
        step(
            ui("set_text", id="discount", text="10"),
            ui("read", id="total"),
            ui("screenshot", name="before"),
        ),
        step(
            ui("stop"),
            use("read_file", path="tests/test_model.py"),
            say="The total stays 90.00 although the discount shows 9.00: total() returns the subtotal.",
            expect=["Total: 90.00"],
        ),
        step(
            write("invoice/model.py", fix("total-ignores-the-discount", "invoice/model.py")),
            write("tests/test_model.py", test),
        ),
        step(use("build_app"), use("run_tests")),
        step(ui("start"), expect=["passed"]),
        step(
            ui("set_text", id="discount", text="10"),
            ui("read", "toolu_discount_10", id="discount_amount"),
            ui("read", "toolu_total_10", id="total"),
        ),
        report(
            1,
            "discount 10 → 'Discount: 9.00', 'Total: 81.00'",
            [("toolu_discount_10", "Discount: 9.00"), ("toolu_total_10", "Total: 81.00")],
        ),
        step(
            ui("set_text", id="discount", text="25"),
            ui("read", "toolu_subtotal_25", id="subtotal"),
            ui("read", "toolu_discount_25", id="discount_amount"),
            ui("read", "toolu_total_25", id="total"),
        ),
        report(
            2,
            "discount 25 → 'Discount: 22.50', 'Total: 67.50', subtotal still 90.00",
            [
                ("toolu_subtotal_25", "Subtotal: 90.00"),
                ("toolu_discount_25", "Discount: 22.50"),
                ("toolu_total_25", "Total: 67.50"),
            ],
        ),
        step(
            ui("set_text", id="discount", text="0"),
            ui("read", "toolu_total_0", id="total"),
            ui("screenshot", name="after"),
        ),
        report(3, "discount 0 → 'Total: 90.00'", [("toolu_total_0", "Total: 90.00")]),
        step(
            ui("stop"),
            use(
                "git_commit",
                message=(
                    "card: The total ignores the discount\n\n"
                    "Invoice.total() now subtracts the discount from the subtotal, with a unit test. Verified "
                    "live: 10 % gives a total of 81.00, 25 % gives 67.50, 0 % gives 90.00."
                ),
            ),
        ),
        done(
            "The total now subtracts the discount; all three criteria were checked in the running app."
        ),
    ]


def delete_card() -> list[dict[str, Any]]:
    return [
        step(use("list_files", path="invoice"), think="Look at how Delete selected is handled."),
        step(*reads("invoice/app.py")),
        step(ui("start"), say="Reproduce: select Pens and delete."),
        step(ui("select_row", id="items", row=1), ui("click", id="delete"), ui("read", id="items")),
        step(ui("stop"), say="The row went at once, without a question.", expect=["Desk lamp"]),
        step(write("invoice/app.py", fix("delete-asks-for-confirmation", "invoice/app.py"))),
        step(use("build_app"), use("run_tests")),
        step(ui("start"), expect=["passed"]),
        step(
            ui("select_row", id="items", row=1),
            ui("click", id="delete"),
            ui("list_elements", "toolu_dialog"),
        ),
        report(
            1,
            "selected 'Pens (pack of 10)', clicked delete: confirm_dialog opened, text names the item",
            [
                ("toolu_dialog", "confirm_dialog"),
                ("toolu_dialog", "Pens (pack of 10)"),
                ("toolu_dialog", "confirm_yes"),
                ("toolu_dialog", "confirm_no"),
            ],
        ),
        step(
            ui("click", id="confirm_no"),
            ui("read", "toolu_items_no", id="items"),
            ui("read", "toolu_subtotal_no", id="subtotal"),
        ),
        report(
            2,
            "'No' closed the dialog; three items remain, 'Subtotal: 90.00'",
            [("toolu_items_no", "Pens (pack of 10)"), ("toolu_subtotal_no", "Subtotal: 90.00")],
        ),
        step(
            ui("select_row", id="items", row=1),
            ui("click", id="delete"),
            ui("click", id="confirm_yes"),
            ui("read", id="items"),
            ui("read", "toolu_subtotal_yes", id="subtotal"),
            ui("screenshot", name="after-yes"),
        ),
        report(
            3,
            "'Yes' removed the row; two items remain, 'Subtotal: 75.00'",
            [("toolu_subtotal_yes", "Subtotal: 75.00")],
        ),
        step(ui("stop"), ui("start")),
        step(
            ui("click", id="delete"),
            ui("read", "toolu_items_none", id="items"),
            ui("read", "toolu_subtotal_none", id="subtotal"),
        ),
        report(
            4,
            "no row selected: clicking delete opened no dialog and kept all rows (subtotal 90.00)",
            [
                ("toolu_items_none", "Pens (pack of 10)"),
                ("toolu_items_none", "Desk lamp"),
                ("toolu_subtotal_none", "Subtotal: 90.00"),
            ],
        ),
        step(
            ui("stop"),
            use(
                "git_commit",
                message=(
                    "card: Deleting an item should ask first\n\n"
                    "Delete selected now opens a ConfirmDelete dialog naming the item; the row goes only on Yes. "
                    "Verified live: No keeps all three rows (subtotal 90.00), Yes leaves two (75.00), and "
                    "without a selection nothing happens."
                ),
            ),
        ),
        done("Delete now asks first; each criterion was checked in the running app."),
    ]


def validate_card() -> list[dict[str, Any]]:
    test = with_test("""
@pytest.mark.parametrize("quantity", ["0", "-2", "abc"])
def test_bad_quantities_are_refused(quantity):
    with pytest.raises(InvalidInput, match="quantity"):
        parse_item("Stapler", quantity, "4.50")


@pytest.mark.parametrize("price", ["-4.50", "abc"])
def test_bad_prices_are_refused(price):
    with pytest.raises(InvalidInput, match="price"):
        parse_item("Stapler", "1", price)
""")

    def add(quantity: str, price: str, call: str | None = None) -> list[dict[str, Any]]:
        """Fill in a new line and click Add; `call` is the id of reading the message back."""
        return [
            ui("set_text", id="item_name", text="Stapler"),
            ui("set_text", id="item_quantity", text=quantity),
            ui("set_text", id="item_price", text=price),
            ui("click", id="add"),
            ui("read", call, id="message"),
        ]

    return [
        step(use("list_files", path="."), think="Where are item fields parsed?"),
        step(
            use("read_file", path="invoice/model.py"), use("read_file", path="tests/test_model.py")
        ),
        step(
            write("invoice/model.py", fix("validate-quantity-and-price", "invoice/model.py")),
            write("tests/test_model.py", test),
            say="parse_item accepts anything; refuse bad values with InvalidInput, which the app shows.",
        ),
        step(use("build_app"), use("run_tests")),
        step(ui("start"), expect=["passed"]),
        step(*add("0", "4.50", "toolu_q0"), ui("read", "toolu_subtotal_q0", id="subtotal")),
        report(
            1,
            "quantity 0 refused with a message about the quantity; subtotal stays 90.00",
            [("toolu_q0", "quantity"), ("toolu_subtotal_q0", "Subtotal: 90.00")],
        ),
        step(*add("-2", "4.50", "toolu_q_neg")),
        step(
            *add("abc", "4.50", "toolu_q_abc"),
            ui("read", "toolu_subtotal_q_abc", id="subtotal"),
            expect=["quantity"],
        ),
        report(
            2,
            "quantity -2 and 'abc' refused with the quantity message; the app kept running",
            [
                ("toolu_q_neg", "quantity"),
                ("toolu_q_abc", "quantity"),
                ("toolu_subtotal_q_abc", "Subtotal: 90.00"),
            ],
        ),
        step(*add("1", "-4.50", "toolu_p_neg")),
        step(*add("1", "abc", "toolu_p_abc"), expect=["price"]),
        report(
            3,
            "price -4.50 and 'abc' refused with a message about the price",
            [("toolu_p_neg", "price"), ("toolu_p_abc", "price")],
        ),
        step(
            *add("2", "4.50"),
            ui("read", "toolu_items_added", id="items"),
            ui("read", "toolu_subtotal_added", id="subtotal"),
            ui("screenshot", name="after"),
        ),
        report(
            4,
            "Stapler × 2 at 4.50 added with line total 9.00; subtotal 99.00",
            [
                ("toolu_items_added", "Stapler"),
                ("toolu_items_added", "9.00"),
                ("toolu_subtotal_added", "Subtotal: 99.00"),
            ],
        ),
        step(
            ui("stop"),
            use(
                "git_commit",
                message=(
                    "card: Refuse invalid quantities and prices\n\n"
                    "parse_item now refuses a quantity below 1 or not a whole number and a negative or "
                    "non-numeric price, with tests. Verified live: 0, -2 and abc are refused with a message, "
                    "so are -4.50 and abc as prices, and a valid Stapler line still adds 9.00."
                ),
            ),
        ),
        done("Invalid quantities and prices are refused with a message; verified live."),
    ]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, steps in (
        ("total-ignores-the-discount", total_card()),
        ("delete-asks-for-confirmation", delete_card()),
        ("validate-quantity-and-price", validate_card()),
    ):
        (OUT / f"{name}.json").write_text(
            json.dumps({"responses": steps}, indent=1, ensure_ascii=False) + "\n"
        )
        print(f"wrote {name}.json ({len(steps)} responses)")


if __name__ == "__main__":
    main()
