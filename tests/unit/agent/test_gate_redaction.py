"""The one gate redacts every result, errors and announcements too, and the run log redacts
every string before JSON escapes it, so an odd secret is caught and the line stays JSON.

Real tools through the real `ToolPool`; a real `RunLog` file read back with `json.loads`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

from cardrunner.agent.events import Event, Notice
from cardrunner.agent.toolpool import ToolContext, ToolError, ToolPool, ToolResult
from cardrunner.record.log import RunLog

TOKEN = "ghp_" + "a1B2c3D4" * 5
ODD = 'pa"ss\\word-with-quote'
"""A secret value JSON escapes (`"` and `\\`): replaced in the raw line, it would not match."""


class Leaky:
    """A tool whose failure, result and announcement all quote a secret."""

    name = "leaky"
    description = "Leaks what it is told to."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"how": {"type": "string", "maxLength": 10}},
        "required": ["how"],
    }
    timeout = 10.0

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        match arguments["how"]:
            case "raise":
                raise ToolError(f"tests failed:\nAUTHORIZATION: basic {TOKEN}")
            case "crash":
                raise RuntimeError(f"header {TOKEN} rejected")
            case _:
                return ToolResult(f"ok {TOKEN}", is_error=True, announce=f"tools changed {TOKEN}")


async def test_every_result_of_the_gate_is_redacted() -> None:
    pool = ToolPool([Leaky()])
    events: list[Event] = []
    for how in ("raise", "crash", "return"):
        result = await pool.execute("leaky", {"how": how}, ToolContext(1, events.append))
        assert result.is_error and TOKEN not in result.text, result.text
        assert "[redacted]" in result.text
        assert TOKEN not in result.announce
    # a validation error quotes the argument it refuses
    result = await pool.execute("leaky", {"how": TOKEN}, ToolContext(1, events.append))
    assert result.is_error and "is too long" in result.text and TOKEN not in result.text


def test_the_log_redacts_each_string_and_every_line_stays_json(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with mock.patch.dict(os.environ, {"DB_PASSWORD": ODD}):
        log = RunLog(path)
        for message in (
            f"the value {ODD} and {TOKEN}",
            'a URL "http://u:1", then "y@z" and a quote',
            f'"https://x:{ODD}@host" "q"',
        ):
            log.write(Notice(message=message))
        log.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]  # every line is still JSON
    text = json.dumps(records)
    assert ODD not in path.read_text() and json.dumps(ODD)[1:-1] not in path.read_text()
    assert TOKEN not in text
    assert records[1]["data"]["message"] == 'a URL "http://u:1", then "y@z" and a quote'
