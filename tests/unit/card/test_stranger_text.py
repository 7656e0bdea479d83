"""A stranger's text as a reader sees it (`sources.issues.visible_text`) and closing keywords
that close nothing (`card.record.unclosing`), for any text: what the e2e tests play with one
hostile issue, checked over many generated ones."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.card.record import unclosing
from cardrunner.sources.issues import MAX_TEXT, visible_text

PIECES = st.sampled_from(
    [
        "<!--", "-->", "<", ">", "/", "!", "?", "[", "]", "(", ")", ":", " ", "\n", "a", "img",
        "details", "summary", "http://x.example/p", "\u200b", "\u200d", "\ufeff", "\u202e",
        "\u2066", "\U000e0041", "\x00", "\x1b", "&#8203;", "&#x200B;", "&zwnj;", "&lt;", "`",
        "Fixes", "closes", "resolved", "#", "1", "o/r", "GH-", "https://github.com/o/r/issues/",
    ]
)  # fmt: skip
TEXT = st.lists(PIECES, max_size=40).map("".join)
CLOSING = re.compile(
    r"\b(close[sd]?|fix(e[sd])?|resolve[sd]?):?\s*(#\d|GH-\d|[\w.-]+/[\w.-]+#\d|https?://\S+/(issues|pull)/\d)",
    re.IGNORECASE,
)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_visible_text_hides_nothing(text: str) -> None:
    out = visible_text(text).text
    assert "<!--" not in out
    assert not any(
        unicodedata.category(c) in ("Cf", "Cc", "Co", "Cs") and c not in "\n\t" for c in out
    )
    assert not re.search(r"&(#8203|#x200B|zwnj);", out, re.IGNORECASE)
    assert not re.search(r"(?<!\\)<[A-Za-z/!?]", out)  # no raw HTML: every one escaped
    assert not re.search(r"(?<!\\)\]\(", out)  # no link whose target is hidden


def test_hidden_text_that_joins_once_the_invisible_goes_is_hidden_too() -> None:
    seen = visible_text("a<!\u200b-- run this -&#8203;->b &#x200B;")
    assert seen.text == "ab" and (seen.comments, seen.hidden) == (1, 3), seen


def test_a_long_text_is_cut_and_says_so() -> None:
    seen = visible_text("word " * 10_000)
    assert len(seen.text) == MAX_TEXT and seen.cut == 50_000 - 1 - MAX_TEXT
    assert f"cut after {MAX_TEXT:,} characters" in seen.notes()


def test_links_and_images_show_where_they_go() -> None:
    text = (
        "[docs](https://a.example) [https://b.example](https://evil.example 'x') "
        '![pic](http://img.example/p.png) [same](same)\n[ref]: https://hidden.example "t"'
    )
    assert visible_text(text).text == (
        "docs (https://a.example) https://b.example (https://evil.example) "
        "pic (image: http://img.example/p.png) same\nref: https://hidden.example"
    )


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_unclosing_leaves_no_closing_keyword(text: str) -> None:
    out = unclosing(text, note=False)
    assert not CLOSING.search(out), out
    assert unclosing(out, note=False) == out  # and a second pass changes nothing


def test_unclosing_says_how_many_it_rewrote() -> None:
    out = unclosing("card: x\n\nFixes #1, closes https://github.com/o/r/issues/2; Resolved: o/r#3")
    assert out.startswith("card: x\n\nFixes issue 1, closes o/r issue 2; Resolved: o/r issue 3\n")
    assert "rewrote 3 closing keyword(s)" in out
    assert unclosing("Fixed the bug in #1 handling") == "Fixed the bug in #1 handling"
