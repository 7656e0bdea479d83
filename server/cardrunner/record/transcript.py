"""Turning a run log into a transcript: any real run becomes an offline, replayable one.

The log keeps every assistant turn exactly as the model sent it (`round` lines carry `content`,
`stop_reason` and the usage), which is all a transcript is (docs/transcripts.md). Replaying the
result with `cardrunner run --replay` or `replay` in cardrunner.toml runs the same tool calls
against today's code with no API key, so a user can check that their setup — commands, app, MCP
servers — still does what it did when the run was made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cardrunner.agent.events import Usage
from cardrunner.record.log import NotARunLog, checked_records
from cardrunner.tools.evidence import numbered_from


class Step(BaseModel):
    """One scripted model response: what `ScriptedModel` plays for one request."""

    model_config = ConfigDict(extra="forbid")

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: Usage | None = None
    """The usage the original run was billed; without it the replay estimates it."""
    expect: list[str] = Field(default_factory=list)
    """Text the tool results this step answers must contain, or the replay fails honestly."""


class Transcript(BaseModel):
    """A transcript file: `{"responses": [step, ...]}` plus where it came from."""

    model_config = ConfigDict(extra="forbid")

    responses: list[Step]
    source: str | None = None
    """The run it was made from (`run <id> · card <path> · model <name>`), for people."""
    criteria_from: Literal[0, 1] = 1
    """The number its `report_criterion` calls give the first criterion: 0 in a log made before
    criteria were numbered from 1 (the calls are kept as sent; the replay counts them up)."""


UsageMode = Literal["recorded", "estimated"]


def transcript_from_log(path: Path, usage: UsageMode = "recorded") -> Transcript:
    """The run's assistant turns in order; raises NotARunLog (or OSError) for a bad file.

    A resumed run appends to the same log: its rounds continue the numbering, and a round
    logged twice (a crash right after the line was written) keeps its last version.
    """
    records = checked_records(path)
    start = records[0]["data"]
    rounds: dict[int, dict[str, Any]] = {}
    for record in records:
        data = record.get("data") or {}
        number = data.get("round")
        if record["type"] == "round" and isinstance(data.get("content"), list):
            if not isinstance(number, int) or isinstance(number, bool):
                raise NotARunLog(f"{path} is damaged: a `round` line without a round number")
            rounds[number] = data
    if not rounds:
        raise NotARunLog(f"{path} holds no model responses (the run ended before round 1)")
    try:
        steps = [_step(rounds[n], usage) for n in sorted(rounds)]
    except ValidationError as exc:  # an edited log: say which round, in one line
        raise NotARunLog(f"{path} is damaged: {_first_error(exc)}") from None
    source = f"run {start.get('run_id')} · card {start.get('card')} · model {start.get('model')}"
    first = 0 if numbered_from(start.get("tool_specs")) == 0 else 1
    return Transcript(responses=steps, source=source, criteria_from=first)


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


def _step(data: dict[str, Any], usage: UsageMode) -> Step:
    recorded = Usage.model_validate({k: data.get(k, 0) for k in Usage.model_fields})
    return Step(
        content=data["content"],
        stop_reason=data.get("stop_reason") or "end_turn",
        usage=recorded if usage == "recorded" else None,
    )


def transcript_json(transcript: Transcript) -> str:
    """The file's text: two-space JSON, unset fields left out, so diffs between runs stay small."""
    return transcript.model_dump_json(indent=2, exclude_none=True, exclude_defaults=True) + "\n"
