"""A big board: the first scan runs while requests are answered, happens once, and what the
watcher reports afterwards is parsed only when its text changed.

The board is written before the server starts (the module's own `lsp_project`), large enough
that the scan goes to the scanner process and lasts a while. Parses are counted with
`cardrunner.debug.index`, never inferred from timing.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    CARD,
    Project,
    command,
    diags,
    lens_titles,
    make_project,
    project_of,
    wait_for,
)

CARDS = 1500
BROKEN = range(0, CARDS, 100)  # `state: Doing`: an error on line 2, and no lenses
BUDGET = range(50, CARDS, 100)  # Failed by max_rounds: "Grant +20 rounds"
CLEAN_LENSES = ["▶ Run card"]
BUDGET_LENSES = ["▶ Run card", "Grant +20 rounds"]


def card_text(n: int) -> str:
    text = CARD.format(title=f"Card {n}")
    if n in BROKEN:
        return text.replace("state: New", "state: Doing")
    if n in BUDGET:
        return text.replace("state: New", "state: Failed\nreason: max_rounds")
    return text


def name(n: int) -> str:
    return f"card-{n:04d}"


@pytest.fixture
def lsp_project(tmp_path: Path) -> Project:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    for n in range(CARDS):
        project.write_card(name(n), card_text(n))
    return project


def expected_lenses(n: int) -> list[str]:
    return [] if n in BROKEN else BUDGET_LENSES if n in BUDGET else CLEAN_LENSES


async def index_stats(client: LanguageClient) -> dict[str, Any]:
    return await command(client, "cardrunner.debug.index")


async def serving(client: LanguageClient) -> None:
    """Start-up is over: the scan, and the watcher's catch-up pass after it."""
    await wait_for(
        lambda: any(" serving " in m.message for m in client.log_messages), 120, "start-up"
    )


def replace_atomically(path: Path, text: str) -> None:
    """As editors and `write_card` save: a temp file renamed over the card (one event)."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


async def poll_server(probe: Callable[[], Awaitable[Any]], what: str, within: float = 20.0) -> Any:
    """Ask the server until `probe` returns something truthy; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while not (value := await probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(0.05)
    return value


async def test_requests_during_the_first_scan_get_the_cards_they_ask_about(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    changed = CARDS - 1  # changed while the scan may be reading it: the newest text wins
    replace_atomically(project.card(name(changed)), card_text(0).replace("Card 0", "Late"))
    asked = [1450, 750, 1400, 1]  # budget-stopped ×2, broken, clean; the scan reads 0 first
    during = 0
    while True:
        for n in asked:
            assert await lens_titles(client, project.uri(name(n))) == expected_lenses(n), n
        stats = await index_stats(client)
        if stats["scanned"]:
            break
        during += 1  # every lens above was answered before the scan was over
    assert during > 0, "the scan was over before the first answer: it blocked the requests"

    await serving(client)
    stats = await index_stats(client)
    assert stats["cards"] == CARDS and stats["scans"] == 1 and stats["syncs"] >= 1
    # Each card parsed once, by the scanner or here (a request came first); the card changed
    # during the scan may have been parsed twice, if the scanner read it before the change.
    assert CARDS <= stats["parses"] + stats["scannerParses"] <= CARDS + 1
    assert stats["parses"] <= len(asked) + 1
    for n in BROKEN:  # the ones a request read first among them
        [problem] = await wait_for(lambda n=n: diags(client, project.uri(name(n))), what=str(n))
        assert problem.range.start.line == 2 and problem.severity == types.DiagnosticSeverity.Error
    late = await wait_for(lambda: diags(client, project.uri(name(changed))), what="the late one")
    assert "unknown state" in late[0].message  # the text written during the scan
    assert await lens_titles(client, project.uri(name(changed))) == []
    assert not diags(client, project.uri(name(1)))  # clean cards: nothing to say


async def test_after_the_scan_the_watcher_parses_only_cards_whose_text_changed(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    await serving(client)
    before = await index_stats(client)
    assert before["parses"] + before["scannerParses"] == CARDS

    same = project.card(name(7))
    replace_atomically(same, same.read_text())  # saved again, unchanged
    os.utime(project.card(name(8)))  # touched
    replace_atomically(project.card(name(9)), card_text(0))  # now broken
    uri = project.uri(name(9))
    [problem] = await wait_for(lambda: diags(client, uri), what="the changed card's problem")
    assert "unknown state" in problem.message
    assert await lens_titles(client, uri) == []

    async def reread() -> dict[str, Any] | None:
        stats = await index_stats(client)
        return stats if stats["reads"] >= before["reads"] + 2 else None

    stats = await poll_server(reread, "the watcher to read the saved card")
    assert stats["parses"] == before["parses"] + 1  # card 9 only
    assert stats["unchanged"] >= before["unchanged"] + 1  # card 7 (and 8, if reported)
    assert stats["scannerParses"] == before["scannerParses"] and stats["scans"] == 1
