"""No raw control character reaches a terminal: 10,000 generated reviews through the real approver."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.agent.review import ReviewRequest
from cardrunner.config.secrets import shown, visible
from cardrunner.terminal.approver import TerminalApprover

CONTROLS = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]] + [
    "\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c",
    "\u2028", "\u2029",
]  # fmt: skip
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
TEXT = st.text(
    alphabet=st.one_of(st.sampled_from(CONTROLS), st.characters(codec="utf-8")), max_size=60
)


def review_output(diff: str, message: str, title: str) -> str:
    written: list[str] = []
    request = ReviewRequest(
        run_id="r",
        card_title=shown(title),
        card_path=Path("c.md"),
        root=Path("."),
        message=shown(message),
        files=["a.py"],
        diff=shown(diff),
        base_tree="t",
    )  # fmt: skip — the commit tool passes every field through `shown`, as here
    approver = TerminalApprover(written.append, read=lambda prompt: "y")
    asyncio.run(approver.review(request))
    return "".join(written)


@settings(max_examples=10_000, deadline=None)
@given(diff=TEXT, message=TEXT, title=TEXT)
def test_the_terminal_review_never_prints_a_raw_control(
    diff: str, message: str, title: str
) -> None:
    out = review_output(diff, message, title)
    assert not FORBIDDEN.search(out), repr(out)
    for char in set(diff) & set(CONTROLS) - {"\n", "\t", "\r"}:
        code = ord(char)
        assert (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") in out


def test_the_escapes_read_as_what_they_hide() -> None:
    assert visible("ok\x1b[2K\rEVIL\r\n") == "ok\\x1b[2K\\rEVIL\n"
    assert visible("abc\u202edef\tx\n") == "abc\\u202edef\tx\n"
    assert visible("plain text ✓") == "plain text ✓"
