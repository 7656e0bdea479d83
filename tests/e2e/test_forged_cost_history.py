"""Forged run costs in the history make no promise: the lens trusts only the costs it can check.

A card commit's `Cost-USD:` trailer is a line of a commit message, written by anyone who can push
(a contributor's branch, an imported repository). An attacker who wants the lens to promise
"<$0.01 a run" forges records; the forecast must ignore every one it cannot check — not finite,
negative, tiny with no run behind it, or contradicting the run log it names — and say so."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from cardrunner.card.card import card_slug
from tests.support.inprocess import InProcessEditor
from tests.support.lsp import Project, git, make_project


def commit_record(project: Project, card: Path, trailers: str) -> None:
    slug = card_slug(card, project.root)
    message = f"card: {card.stem} → Done\n\nCard: {slug}\nResult: done\n{trailers}"
    git(project.root, "commit", "-q", "--allow-empty", "-m", message)


def write_log(project: Project, name: str, cost: float) -> str:
    """A run log with a `result` line that counted `cost`; its path as a `Log:` trailer has it."""
    path = project.root / ".cardrunner" / "runs" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"time": "2026-12-01T10:00:00Z", "type": "start", "data": {"run_id": name}},
        {"time": "2026-12-01T10:05:00Z", "type": "result", "data": {"cost_usd": cost}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return f".cardrunner/runs/{name}.jsonl"


async def lens(editor: InProcessEditor, uri: str) -> str:
    found: list[dict[str, Any]] = await editor.request(
        "textDocument/codeLens", {"textDocument": {"uri": uri}}
    )
    [line] = [t for item in found if (t := item["command"]["title"]).startswith("≈ ")]
    return line


async def test_forged_cost_trailers_make_no_cheap_promise(tmp_path: Path) -> None:
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    card = project.write_card("target", title="Looks cheap")
    other = project.write_card("other", title="Another card")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "cards")
    log = write_log(project, "r-real", 0.4)
    forged = [
        "Cost-USD: 0.0001\n",  # no tokens, no log: nothing to check it against
        "Tokens: 200\nCost-USD: 0.0001\n",  # fewer tokens than one request carries
        "Tokens: 900000\nCost-USD: 0.0001\n",  # 900k tokens cost more than that at any rate
        "Tokens: 120000\nCost-USD: -50\n",
        "Tokens: 120000\nCost-USD: nan\n",
        "Tokens: 120000\nCost-USD: inf\n",
        "Tokens: 120000\nCost-USD: -inf\n",
        f"Tokens: 120000\nCost-USD: 0.0001\nLog: {log}\n",  # the log it names says $0.40
        "Tokens: 120000\nCost-USD: 0.0001\nLog: ../../../etc/passwd\n",
    ]
    for trailers in forged:
        commit_record(project, card, trailers)
        commit_record(project, other, trailers)
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        for uri in (editor.open(card), editor.open(other)):
            line = await lens(editor, uri)
            assert "<$0.01" not in line, line
            assert "estimate from the card's size" in line, line
            assert f"{2 * len(forged)} unverifiable past costs ignored" in line, line  # both cards
    finally:
        await editor.stop()


async def test_checked_costs_still_count_and_the_lens_says_so(tmp_path: Path) -> None:
    """The check must not throw honest history away: a cost its log confirms, and one whose
    tokens make it plausible, are the forecast; a forged one beside them is named as ignored."""
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    card = project.write_card("target", title="Ran before")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "card")
    log = write_log(project, "r-real", 0.3)
    commit_record(project, card, f"Tokens: 150000\nCost-USD: 0.3\nLog: {log}\n")
    commit_record(project, card, "Tokens: 120000\nCost-USD: 0.12\n")
    commit_record(project, card, "Tokens: 120000\nCost-USD: 0.0001\n")
    editor = InProcessEditor(project.root)
    await editor.start()
    try:
        line = await lens(editor, editor.open(card))
        expected = "≈ $0.12–$0.30 a run (from 2 past runs of this card; "
        assert line == expected + "1 unverifiable past cost ignored)", line
    finally:
        await editor.stop()
