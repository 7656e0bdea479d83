"""What an ACP client is told of a run's end: its cost marked as an estimate when it is one."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.acp.updates import RunUpdates
from cardrunner.agent.events import RunFinished, RunStarted, Usage


@pytest.mark.parametrize(
    ("model", "estimated", "shown"),
    [
        ("claude-opus-4-5", False, "$0.0500"),
        ("replay:fix.json", False, "~$0.0500 (estimate)"),
        ("claude-opus-4-5", True, "~$0.0500 (estimate)"),
    ],
)
def test_the_end_of_a_run_marks_an_estimated_cost(
    tmp_path: Path, model: str, estimated: bool, shown: str
) -> None:
    updates = RunUpdates(tmp_path)
    updates.updates(
        RunStarted(
            run_id="r", card="cards/a.md", title="A", model=model, tools=[], limits={},
            criteria=["one"],
        )
    )  # fmt: skip
    end = RunFinished(
        status="done", rounds=3, tool_calls=4, usage=Usage(estimated=estimated), cost_usd=0.05
    )
    text = updates.updates(end)[-1].model_dump_json()
    assert f"3 rounds · 4 tool calls · {shown}" in text
    assert ("~$" in text) == (shown != "$0.0500")
