"""A long run costs the editor no more per round than a short one (issue 15).

Everything the server sends about a live run — its run view (`cardrunner/runSummary`), its
diagnostics, lenses, hover and run status — is asked for while one run sits at round 41 and
another at round 161 (both in a test command that takes its time), and the late one's must not
be bigger: an editor asks for these several times a round, so a size that grows with the round
number is work per round that grows with the run. Sizes, not times, are compared.

The server is the real `cardrunner lsp` subprocess with real git and real tools; only the
model's answers come from transcripts.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    Project,
    command,
    diags,
    editor_of,
    final,
    lens_titles,
    make_project,
    project_of,
    tool,
    turn,
    wait_for,
)

RUN_SUMMARY = "cardrunner/runSummary"
SHORT, LONG = 40, 160
"""Rounds of instant tools before each run sits in its test command."""
SAME = 1.2
"""At most this much bigger at round 161 than at round 41 (digits and counts grow a little)."""


def reads_then_tests(rounds: int) -> list[dict[str, Any]]:
    """`rounds` rounds of instant reads (paths vary: no stall), then `run_tests`, which sits."""
    calls = [
        tool("read_file", path="src/app.py"),
        tool("list_files", path="src"),
        tool("list_files", path="cards"),
        tool("read_file", path="cardrunner.toml"),
    ]
    steps = [turn(calls[i % len(calls)], text=f"Round {i + 1}: looking.") for i in range(rounds)]
    return [*steps, turn(tool("run_tests")), final("RESULT: failed: tests never ended")]


@pytest.fixture
def lsp_project(tmp_path: Path) -> Project:
    """The usual workspace, with room for the long run (rounds, and tokens: its conversation
    grows with every round), set before the server reads its settings."""
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = project.root / "cardrunner.toml"
    limits = f"max_rounds = {LONG + 10}\nmax_tokens = 0"
    toml.write_text(toml.read_text().replace("max_rounds = 12", limits))
    return project


async def summary(client: LanguageClient, uri: str, **more: Any) -> dict[str, Any]:
    answer = await client.protocol.send_request_async(RUN_SUMMARY, {"uri": uri, **more})
    return dict(answer._asdict())  # pygls hands a custom request's answer over as a namedtuple


async def sizes(client: LanguageClient, card: Path) -> dict[str, int]:
    """The size (characters) of each thing the editor asks for or is sent about `card`."""
    uri = card.as_uri()
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(1, 3))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    status = editor_of(client).last_status(uri)
    return {
        "run view": len((await summary(client, uri))["text"]),
        "diagnostics": sum(len(d.message) for d in diags(client, uri)),
        "lenses": sum(len(t) for t in await lens_titles(client, uri)),
        "hover": len(hover.contents.value),
        "run status": len(json.dumps(status)),
    }


async def test_what_a_live_run_sends_does_not_grow_with_its_rounds(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    cards = {}
    for name, rounds in (("short", SHORT), ("long", LONG)):
        project.transcript(name, reads_then_tests(rounds))
        cards[name] = project.write_card(name, title=f"Card {name:>5}")
    editor = editor_of(client)
    for card in cards.values():
        editor.open(card)
        assert "runId" in await command(client, "cardrunner.runCard", card.as_uri())

    def sitting(card: Path, rounds: int) -> bool:
        status = editor.last_status(card.as_uri()) or {}
        shown = any(f"round {rounds + 1}/" in d.message for d in diags(client, card.as_uri()))
        return status.get("tool") == "run_tests" and status.get("round") == rounds + 1 and shown

    await wait_for(lambda: sitting(cards["short"], SHORT), 60, "the short run in its tests")
    await wait_for(lambda: sitting(cards["long"], LONG), 60, "the long run in its tests")

    early, late = await sizes(client, cards["short"]), await sizes(client, cards["long"])
    grown = {k: f"{early[k]} → {late[k]}" for k in early if late[k] > SAME * early[k]}
    assert not grown, f"bigger at round {LONG + 1} than at round {SHORT + 1}: {grown}"

    live = (await summary(client, cards["long"].as_uri()))["text"].splitlines()
    assert live[0].startswith("run ") and "earlier lines not shown" in "\n".join(live)
    assert any(line.startswith(f"round {LONG + 1:>3} ") for line in live), live[-5:]
    assert live[-1].startswith(f"now: round {LONG + 1}/"), live[-1]
    whole = (await summary(client, cards["long"].as_uri(), full=True))["text"].splitlines()
    assert [int(x.split()[1]) for x in whole if x.startswith("round ")] == list(range(1, LONG + 2))

    for card in cards.values():
        assert (await command(client, "cardrunner.cancelRun", card.as_uri()))["cancelled"]
    uri = cards["long"].as_uri()
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", 30)
    ended = (await summary(client, uri))["text"]
    assert ended.count("\nround ") == LONG + 1 and "earlier lines not shown" not in ended
