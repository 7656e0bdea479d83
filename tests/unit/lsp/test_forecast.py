"""The cost forecast before the click, through the real server and an in-process editor: the
lens and the board say what a run is likely to cost, and from what (git's card commits)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cardrunner.card.card import card_slug, parse_card
from cardrunner.config.loading import load_settings
from cardrunner.config.plainsettings import SettingsView
from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.features.codelens import Forecasts
from tests.support.inprocess import InProcessEditor
from tests.support.lsp import Project, git, make_project


def recorded_run(project: Project, card: Path, cost: str) -> None:
    """A card commit as a run leaves it (run/cardcommit.py): the record in its trailers."""
    slug = card_slug(card, project.root)
    message = f"card: {card.stem} → Done\n\nCard: {slug}\nResult: done\nTokens: 120000\nCost-USD: {cost}\n"
    git(project.root, "commit", "-q", "--allow-empty", "-m", message)


async def forecast_lens(editor: InProcessEditor, uri: str) -> str:
    found: list[dict[str, Any]] = await editor.request(
        "textDocument/codeLens", {"textDocument": {"uri": uri}}
    )
    [line] = [t for lens in found if (t := lens["command"]["title"]).startswith("≈ ")]
    return line


def on_board(board: dict[str, Any], path: str) -> dict[str, Any]:
    return next(c for col in board["columns"] for c in col["cards"] if c["path"] == path)


async def test_the_lens_and_the_board_forecast_from_past_runs_or_the_cards_size(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    fresh = project.write_card("fresh", title="Never run")
    ran = project.write_card("ran", title="Ran twice")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "two cards")
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        estimate = await forecast_lens(editor, editor.open(fresh))
        assert re.fullmatch(
            r"≈ \$\d+\.\d\d–\$\d+\.\d\d a run \(estimate from the card's size, "
            r"~\d+k tokens to start\)",
            estimate,
        ), estimate
    finally:
        await editor.stop()
    recorded_run(project, ran, "0.42")
    recorded_run(project, ran, "0.18")
    editor = InProcessEditor(project.root)
    await editor.start()  # the past runs are read from git at start and after every run
    try:
        own = "≈ $0.18–$0.42 a run (from 2 past runs of this card)"
        assert await forecast_lens(editor, editor.open(ran)) == own
        others = "≈ $0.18–$0.42 a run (from 2 past runs of other cards)"
        assert await forecast_lens(editor, editor.open(fresh)) == others
        board = await editor.request(names.BOARD, None)
        assert on_board(board, "cards/ran.md")["forecast"] == own
        assert on_board(board, "cards/fresh.md")["forecast"] == others
    finally:
        await editor.stop()


async def test_the_costs_are_read_again_only_when_head_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    card = project.write_card("ran", title="Ran once")
    settings, _ = load_settings(project.root)
    view = SettingsView.from_dump(settings.dump())
    forecasts = Forecasts(project.root, lambda: view)
    parsed, _ = parse_card(card.read_text(), card)
    assert parsed is not None
    calls = counted_git(tmp_path / "bin", monkeypatch)

    await forecasts.load()
    assert not await forecasts.load()  # HEAD did not move: nothing changed
    recorded_run(project, card, "0.42")
    assert await forecasts.load()  # a new card commit: its cost is learnt
    assert "from 1 past run of this card" in forecasts.of(card, parsed).title()
    recorded_run(project, card, "0.18")
    before = len(calls())
    ended_together = await asyncio.gather(*(forecasts.load() for _ in range(8)))
    assert ended_together.count(True) == 1
    asked = calls()[before:]
    # eight runs ended: the first load reads HEAD and its log; the seven asked while it read
    # share one more look at HEAD (a commit could have come meanwhile), not seven
    assert sum("HEAD^{commit}" in c for c in asked) == 2, asked
    assert sum("--grep=Result:" in c for c in asked) == 1, asked
    assert "from 2 past runs of this card" in forecasts.of(card, parsed).title()


def counted_git(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Put a `git` first on PATH that notes each command line, then runs the real one."""
    real, log = shutil.which("git"), folder / "calls"
    folder.mkdir()
    shim = folder / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return lambda: log.read_text().splitlines() if log.exists() else []
