"""The demo's three transcripts fix the app through the real runner; the fixed behaviour is then
confirmed through the UI server (not by reading files), and `cardrunner demo` works end to end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cardrunner.agent.events import RunFinished, RunStarted, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.demo import CARDS, create_workspace
from cardrunner.demo.tour import transcript_for
from cardrunner.models.scripted import ScriptedModel
from cardrunner.processes.groups import ProcessGroups
from cardrunner.record.log import read_events, read_log
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.uiserver import ui_server, ui_servers, wait_gone

GROUPS = ProcessGroups()
"""The process groups the demo's runs start (the app, the UI server, builds and tests)."""


async def play(root: Path, card: str) -> RunFinished:
    settings, problems = load_settings(root)
    assert problems == []
    model = ScriptedModel.from_file(transcript_for(card))
    options = RunOptions(
        root=root,
        card_path=root / card,
        settings=settings,
        model=model,
        approver=AutoApprover(),
        processes=GROUPS,
    )
    events = [e async for e in run_card(options)]
    model.assert_complete()
    result = events[-1]
    assert isinstance(result, RunFinished)
    return result


@pytest.fixture(scope="module")
def fixed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = create_workspace(tmp_path_factory.mktemp("demo") / "repo")
    for card in CARDS:
        result = asyncio.run(play(root, card))
        assert result.status == "done", (card, result.reason, result.detail, result.final_text)
        assert result.commit
    return root


def test_each_card_ends_done_with_one_reviewed_commit(fixed_repo: Path) -> None:
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=fixed_repo, capture_output=True, text=True, check=True
    )
    subjects = log.stdout.splitlines()
    assert subjects[:6] == [  # each run's commit, then the card's state in one of its own
        "card: Refuse invalid quantities and prices → Done",
        "card: Refuse invalid quantities and prices",
        "card: Deleting an item should ask first → Done",
        "card: Deleting an item should ask first",
        "card: The total ignores the discount → Done",
        "card: The total ignores the discount",
    ]
    for card in CARDS:
        assert "state: Done" in (fixed_repo / card).read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=fixed_repo, capture_output=True, text=True, check=True
    )
    assert status.stdout == "", "no card (or anything else) is left modified"
    assert not GROUPS.live() and not wait_gone(ui_servers())


def test_each_run_was_told_agents_md_and_followed_it(fixed_repo: Path) -> None:
    rules = (fixed_repo / "AGENTS.md").read_text()
    logs = sorted((fixed_repo / ".cardrunner" / "runs").glob("*.jsonl"))
    assert len(logs) == len(CARDS)
    for log in logs:
        events = list(read_events(read_log(log)))
        [start] = [e for e in events if isinstance(e, RunStarted)]
        assert start.instructions == [f"AGENTS.md ({len(rules.encode())})"]
        assert start.system.endswith(f"### AGENTS.md\n\n{rules.strip()}\n")
        calls = [(e.name, e.arguments) for e in events if isinstance(e, ToolFinished)]
        names = [name for name, _ in calls]
        assert "mcp__ui__ui_screenshot" in names[: names.index("git_commit")]
        written = {a.get("path") for name, a in calls if name == "write_file"}
        assert "invoice/model.py" not in written or "tests/test_model.py" in written


async def test_the_total_now_includes_the_discount(fixed_repo: Path) -> None:
    async with ui_server(fixed_repo) as ui:
        await ui.start()
        await ui.ok("ui_set_text", id="discount", text="10")
        assert "81.00" in await ui.ok("ui_read", id="total")
        await ui.ok("ui_stop")


async def test_delete_asks_and_no_keeps_the_row(fixed_repo: Path) -> None:
    async with ui_server(fixed_repo) as ui:
        await ui.start()
        await ui.ok("ui_select_row", id="items", row=1)
        opened = await ui.ok("ui_click", id="delete")
        assert "confirm_dialog" in opened and "Pens (pack of 10)" in opened
        await ui.ok("ui_click", id="confirm_no")
        assert "Pens (pack of 10)" in await ui.ok("ui_read", id="items")
        assert "90.00" in await ui.ok("ui_read", id="subtotal")
        await ui.ok("ui_stop")


async def test_invalid_values_are_refused_with_a_message(fixed_repo: Path) -> None:
    async with ui_server(fixed_repo) as ui:
        await ui.start()
        await ui.fill("Stapler", "0", "4.50")
        await ui.ok("ui_click", id="add")
        assert "quantity" in (await ui.ok("ui_read", id="message")).lower()
        await ui.fill("Stapler", "1", "-4.50")
        await ui.ok("ui_click", id="add")
        assert "price" in (await ui.ok("ui_read", id="message")).lower()
        assert "Stapler" not in await ui.ok("ui_read", id="items")
        await ui.ok("ui_stop")


async def test_a_transcript_that_no_longer_fits_fails_honestly(tmp_path: Path) -> None:
    root = create_workspace(tmp_path / "repo")
    app = root / "invoice" / "app.py"
    app.write_text(
        app.read_text().replace('f"Total: ', 'f"Grand total: ')
    )  # not what the transcript reads
    await asyncio.to_thread(
        subprocess.run, ["git", "commit", "-qam", "relabel"], cwd=root, check=True
    )
    result = await play_allowing_leftovers(root, CARDS[0])
    assert result.status == "failed" and result.reason == "model_failed"
    assert "no longer fits" in result.detail


async def play_allowing_leftovers(root: Path, card: str) -> RunFinished:
    settings, _ = load_settings(root)
    model = ScriptedModel.from_file(transcript_for(card))
    options = RunOptions(
        root=root, card_path=root / card, settings=settings, model=model, approver=AutoApprover()
    )
    events = [e async for e in run_card(options)]
    assert isinstance(events[-1], RunFinished)
    return events[-1]


@pytest.mark.timeout(900)  # the demo, then one more run of its New card, on a shared machine
def test_cardrunner_demo_as_a_newcomer_runs_it(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run(
        [sys.executable, "-m", "cardrunner", "demo", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(" done ") == 3
    assert "no terminal to ask on" in proc.stderr
    assert "Open it in an editor" in proc.stdout
    root = tmp_path / "demo"
    me = str(Path(sys.executable).parent / "cardrunner")  # not on that PATH: named in full
    assert f"{me} log {root}/.cardrunner/runs/" in proc.stdout
    assert "git revert" not in proc.stdout.replace("git -C", "")
    settings = json.loads((root / ".vscode" / "settings.json").read_text())
    assert settings == {"cardrunner.server.command": [me, "lsp"]}
    assert f'cmd = {{ "{me}", "lsp" }}' in proc.stdout, "the Neovim line names it too"
    # VS Code runs no program a folder names on its own: the hand-off says it asks once, and what
    assert f"it asks once whether to start {me} lsp" in proc.stdout
    last = root / CARDS[-1]
    assert "state: New" in last.read_text() and f"nvim {last}" in proc.stdout
    clean = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    )
    assert clean.stdout == "", "the editor settings stay out of git"
    # the first click in the editor: a run of the New card with the folder's own settings
    again = subprocess.run(
        [me, "run", CARDS[-1], "--yes"], capture_output=True, text=True, env=env, cwd=root,
        stdin=subprocess.DEVNULL, timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "state: Done" in last.read_text()


def test_a_refused_demo_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cardrunner.demo import tour as command
    from cardrunner.processes import bwrapprobe
    from tests.unit.processes.test_bwrapprobe import NO_PERMISSIONS, fake_bwrap

    fakes = [(fake_bwrap(tmp_path / "usr", NO_PERMISSIONS), bwrapprobe.SYSTEM)]
    monkeypatch.setattr(bwrapprobe, "candidates", lambda: fakes)
    bwrapprobe.probe.cache_clear()
    try:
        assert command.run_demo(tmp_path / "demo", yes=True) == 1
    finally:
        bwrapprobe.probe.cache_clear()
    out, err = capsys.readouterr()
    assert (out + err).count("does not allow unprivileged user namespaces") == 1, out + err
    assert "stopped: the other cards would be refused the same way" in err
    assert "git revert" not in out + err and "Open it in an editor" not in out


def test_a_failed_demo_card_leaves_nothing_for_the_next(tmp_path: Path) -> None:
    from cardrunner.demo.tour import run_cards

    root = create_workspace(tmp_path / "repo")
    model_py = (root / "invoice" / "model.py").read_text()
    give_up = [
        {"content": [{"type": "tool_use", "name": "read_file", "input": {"path": "invoice/model.py"}}], "stop_reason": "tool_use"},
        {"content": [
            {"type": "tool_use", "name": "write_file", "input": {"path": "invoice/model.py", "content": "broken = True\n"}},
            {"type": "tool_use", "name": "write_file", "input": {"path": "invoice/extra.py", "content": "x = 1\n"}},
        ], "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "RESULT: failed: gave up"}], "stop_reason": "end_turn"},
    ]  # fmt: skip
    failing = tmp_path / "give-up.json"
    failing.write_text(json.dumps({"responses": give_up}))
    rows = run_cards(root, [(CARDS[0], failing), (CARDS[0], transcript_for(CARDS[0]))], yes=True)
    assert [r.result for r in rows] == ["failed: model_failed", "done"]
    assert not (root / "invoice" / "extra.py").exists()
    assert (root / "invoice" / "model.py").read_text() != model_py  # the second run's fix


def test_a_missing_piece_is_named_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cardrunner.demo import tour as command

    monkeypatch.setattr(command, "NEEDED", (("no_such_module_for_the_demo", "a test"),))
    assert command.run_demo(tmp_path / "demo", yes=True) == 2
    err = capsys.readouterr().err
    assert "a missing piece, not a failed card" in err
    assert "no_such_module_for_the_demo (a test)" in err
    assert not (tmp_path / "demo").exists()
