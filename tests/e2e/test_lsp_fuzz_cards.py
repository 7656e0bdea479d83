"""A thousand mangled cards typed into the editor: the server answers every one with
diagnostics inside the document, and still answers code lens requests afterwards."""

from __future__ import annotations

import random
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from cardrunner.card.card import parse_card
from tests.support.lsp import CARD, editor_of, project_of, wait_for

EDITS = 1000
NOISE = [
    "---",
    "title:",
    "state: ",
    "runs: [",
    "- ",
    "**Acceptance criteria**",
    "## Acceptance criteria",
    ": :",
    "\t",
    "é",
    "\u2028",
    "{",
    "}",
    "'",
    '"',
    "&a",
    "*a",
    "!!python/object",
    "\x00",
    "…",
    "\r\n",
]


def mangle(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        at = rng.randrange(len(lines) + 1)
        if op == 0 and lines:
            del lines[min(at, len(lines) - 1)]
        elif op == 1:
            lines.insert(at, rng.choice(NOISE) + rng.choice(NOISE) + "\n")
        elif op == 2 and lines:
            i = min(at, len(lines) - 1)
            cut = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:cut] + rng.choice(NOISE) + lines[i][cut:]
        else:
            lines = lines[: rng.randrange(len(lines) + 1)]
    return "".join(lines)


async def test_a_thousand_mangled_cards_never_crash_the_server(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("fuzz", title="Fuzz me")
    uri = editor.open(card)
    rng = random.Random(1129)
    base = CARD.format(title="Fuzz me")
    for version in range(2, EDITS + 2):
        text = mangle(rng, base)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        if version % 100 == 0:  # the server keeps up, and keeps answering
            lenses = await client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            assert lenses is not None
    _, problems = parse_card(text, Path("fuzz.md"))
    expected = sorted((p.line, p.message) for p in problems)

    def latest() -> list[tuple[int, str]] | None:
        mine = [d for d in editor.diagnostics if d.uri == uri]
        if not mine:
            return None
        got = sorted(
            (d.range.start.line, d.message) for d in mine[-1].diagnostics if d.code == "card"
        )
        return got if got == expected else None

    await wait_for(latest, what=lambda: f"the last version's problems {expected}")
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]
