"""The run log read back: the same events the run yielded, and one fold for every view.

A real run (real tools, git, a scripted model) is recorded live; its log is then read back
into events, folded into a `RunState` and summarised as `cardrunner log` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cardrunner.agent.events import Event, RoundFinished, RunFinished, RunStarted, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import StatePaths
from cardrunner.models.scripted import ScriptedModel
from cardrunner.record.account import Account, log_account
from cardrunner.record.log import NotARunLog, log_events, log_record, read_events
from cardrunner.record.state import RunState
from cardrunner.run.options import RunOptions
from cardrunner.run.session import RunSession
from cardrunner.terminal.liveview import LiveView
from tests.support.project import fix_transcript, make_project


async def recorded_run(root: Path) -> tuple[list[Event], list[str], Path]:
    """Run the fixing transcript; returns the events, the live view's lines and the log."""
    settings, problems = load_settings(root)
    assert not problems, problems
    options = RunOptions(
        root=root,
        card_path=root / "cards/fix-add.md",
        settings=settings,
        approver=AutoApprover(),
        model=ScriptedModel(fix_transcript()),
    )
    lines: list[str] = []
    live = LiveView(lines.append, tty=False)
    events: list[Event] = []
    async for event in RunSession(options).events():
        live.show(event)
        events.append(event)
    logs = sorted(StatePaths(root).runs.glob("*.jsonl"))
    assert len(logs) == 1
    return events, "".join(lines).splitlines(), logs[0]


async def test_the_log_reads_back_as_the_events_it_kept(tmp_path: Path) -> None:
    make_project(tmp_path)
    events, _, log = await recorded_run(tmp_path)
    kept = [e for e in events if log_record(e) is not None]
    back = log_events(log)
    assert [e.type for e in back] == [e.type for e in kept]
    assert back[0] == kept[0] and isinstance(back[0], RunStarted)
    assert back[-1] == kept[-1] and isinstance(back[-1], RunFinished)
    assert back[-1].status == "done" and back[-1].usage.total > 0
    tools = [e for e in back if isinstance(e, ToolFinished)]
    assert tools == [e for e in kept if isinstance(e, ToolFinished)]
    live_rounds = [e for e in kept if isinstance(e, RoundFinished)]
    read_rounds = [e for e in back if isinstance(e, RoundFinished)]
    for live, read in zip(live_rounds, read_rounds, strict=True):
        assert read.usage == live.usage and read.total_usage == live.total_usage
        assert read.max_rounds == live.max_rounds and read.response == live.response
        assert abs(read.total_cost_usd - live.total_cost_usd) < 1e-5


async def test_the_live_view_the_log_and_a_fold_agree_on_the_counts(tmp_path: Path) -> None:
    make_project(tmp_path)
    events, lines, log = await recorded_run(tmp_path)
    live_view, read_view = RunState(Path(), "", ""), RunState(Path(), "", "")
    for event in events:
        live_view.apply(event)
    for event in log_events(log):
        read_view.apply(event)
    assert read_view.totals() == live_view.totals()
    assert read_view.tool_calls == sum(isinstance(e, ToolFinished) for e in events) > 0
    summary = log_account(log).splitlines()
    result = [line for line in summary if line.startswith("result: ")]  # the ledger follows
    assert result[-1].startswith("result: DONE · " + live_view.totals())
    assert summary[-1].startswith("  criterion 2: verified on "), "numbered for people, from 1"
    assert any(line.strip().startswith(live_view.totals()) for line in lines), lines
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    rows = [line for line in summary if line.startswith("round ")]
    for event, row in zip(rounds, rows, strict=True):  # every priced count: the row adds up
        u = event.usage
        counts = f"in {u.input_tokens:>7,}  cache r {u.cache_read_input_tokens:>7,} "
        counts += f"w {u.cache_creation_input_tokens:>7,}  out {u.output_tokens:>6,}  "
        assert counts + f"${event.cost_usd:.4f}" in row, row


async def test_the_log_names_each_criterion_by_its_number_as_the_model_did(
    tmp_path: Path,
) -> None:
    """A person opening the log (the editor's Show log) reads the number the card and the
    model's `report_criterion` use, beside the list position the runner keeps."""
    make_project(tmp_path)
    events, _, log = await recorded_run(tmp_path)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    said = [
        line["data"]["arguments"]["index"]
        for line in lines
        if line["type"] == "tool" and line["data"]["name"] == "report_criterion"
    ]
    kept = [
        (line["data"]["index"], line["data"]["number"])
        for line in lines
        if line["type"] == "criterion"
    ]
    assert said == [1, 2] and kept == [(0, 1), (1, 2)]
    ledger = lines[-1]["data"]["ledger"]
    assert [(e["index"], e["number"]) for e in ledger] == [(0, 1), (1, 2)]
    assert log_events(log)[-1] == events[-1]  # `number` is for people: reading ignores it


def test_lines_of_an_unknown_kind_or_shape_are_skipped() -> None:
    records = [
        {"time": "2026-01-01T00:00:00Z", "type": "from-a-later-version", "data": {}},
        {"time": "2026-01-01T00:00:00Z", "type": "tool", "data": {"name": "read_file"}},
        {
            "time": "2026-01-01T00:00:01Z",
            "type": "notice",
            "data": {"level": "info", "message": "kept"},
        },
    ]
    assert [e.type for e in read_events(records)] == ["notice"]


async def test_an_account_kept_as_the_log_grows_tells_what_a_whole_reading_tells(
    tmp_path: Path,
) -> None:
    """The editor's live run view reads only what was appended; cut anywhere, even mid-line,
    it must say exactly what `cardrunner log` says of the same bytes."""
    make_project(tmp_path)
    _, _, log = await recorded_run(tmp_path)
    data = log.read_bytes()
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    account = Account(growing)
    for end in [*range(97, len(data), 97), len(data)]:
        growing.write_bytes(data[:end])
        try:
            whole = log_account(growing)
        except NotARunLog:  # not even the start line is complete yet
            with pytest.raises(NotARunLog):
                account.update()
            continue
        account.update()
        assert account.text() == whole
    lines = log_account(log).splitlines()
    assert account.text() == "\n".join(lines) and 0 < account.head < len(lines) - 6
    shown = account.text(newest=5).splitlines()
    assert shown[: account.head] == lines[: account.head] and shown[-5:] == lines[-5:]
    assert shown[account.head].startswith(f"… {len(lines) - account.head - 5:,} earlier lines")
    assert len(shown) == account.head + 6

    growing.write_bytes(data[: data.index(b"\n") + 1])  # replaced by a shorter log
    account.update()
    assert account.text() == log_account(growing) and len(account.lines) == account.head
