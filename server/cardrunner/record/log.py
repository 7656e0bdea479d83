"""The run log: one JSON object a line, written as the run goes.

`.cardrunner/runs/<run-id>.jsonl`, each line `{"time", "type", "data"}` (DESIGN.md). Every line is
flushed when written, so a crash loses at most the line being written. The log is a subscriber
of the event stream like any front end, and it holds enough (assistant content exactly as
received, every tool result exactly as sent, compactions) to resume or replay a run.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Collection, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO

from pydantic import TypeAdapter, ValidationError

from cardrunner.agent import events as ev
from cardrunner.card.card import card_slug
from cardrunner.config.paths import StatePaths
from cardrunner.config.readfile import FileTooLarge, open_regular
from cardrunner.config.secrets import redact


def new_run_id(root: Path, card_path: Path, taken: Collection[str] = ()) -> str:
    """`<UTC time>-<card slug>-<random>`, never one a log or a run in `taken` has already.

    The one place run ids are made: the editor names a run before it starts, the CLI when it
    starts; both must give ids that sort by time and never reuse another run's log. The random
    part keeps two processes that start a run in the same second apart (neither sees the
    other's log yet), so they never share an id and write one interleaved log."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{card_slug(card_path, root)}"[:67]
    paths = StatePaths(root)
    while True:  # 48 random bits: a clash among thousands of ids in one second is ~1e-8
        run_id = f"{base}-{secrets.token_hex(6)}"
        if run_id not in taken and not paths.log(run_id).exists():
            return run_id


def _numbered(criterion: dict[str, Any]) -> dict[str, Any]:
    """A criterion's line with its `number` (from 1, as the card lists it and the model's
    `report_criterion` names it) beside `index`, its place in the list (from 0): the log is
    opened by people too. Reading it back ignores `number`."""
    return {"index": criterion["index"], "number": criterion["index"] + 1, **criterion}


def log_record(event: ev.Event) -> dict[str, Any] | None:
    """The log line for `event`, or None for transient events the log does not keep."""
    match event:
        case ev.RoundStarted() | ev.ToolStarted() | ev.ToolOutput():
            return None
        case ev.RoundFinished():
            data = {
                "round": event.round,
                "ms": event.ms,
                **event.usage.model_dump(),
                "cost_usd": round(event.cost_usd, 6),
                "stop_reason": event.stop_reason,
                "calls": event.calls,
                "text": event.text,
                "content": event.response,
            }
        case ev.RunFinished():  # flat token counts, as DESIGN.md's log contract has them
            data = event.model_dump(mode="json", exclude={"time", "type", "usage"})
            data.update(event.usage.model_dump())
            data["ledger"] = [_numbered(entry) for entry in data["ledger"]]
        case ev.CriterionReported():
            data = _numbered(event.model_dump(mode="json", exclude={"time", "type"}))
        case (
            ev.RunStarted()
            | ev.ToolFinished()
            | ev.BuildChecked()
            | ev.ReviewRequested()
            | ev.ReviewDecided()
            | ev.Compacted()
            | ev.Notice()
            | ev.Announced()
            | ev.ChecksRan()
            | ev.GateObjected()
            | ev.CallObserved()
        ):
            data = event.model_dump(mode="json", exclude={"time", "type"})
    return {"time": event.time.isoformat().replace("+00:00", "Z"), "type": event.type, "data": data}


def _redacted(value: Any) -> Any:
    """`value` with every string in it redacted. Each string is redacted before JSON escapes
    it (a secret holding `"` or `\\` would not match once escaped), and never the line as a
    whole, where a pattern could run across a quote and leave a line no resume can read."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value


class RunLog:
    """Appends events to one run's JSONL file. Write errors propagate (the run must stop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def write(self, event: ev.Event) -> None:
        record = log_record(event)
        if record is None or self._file is None:
            return
        line = json.dumps(_redacted(record), ensure_ascii=False, separators=(",", ":"))
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


MAX_LOG_BYTES = 1 << 30
"""No run log is read past this: a reader handed `/dev/zero`'s like (a file that never ends,
or a planted giant) stops with FileTooLarge instead of filling the memory."""


def _records(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The records among complete lines: JSON objects with a `type` and a `data` object; a
    damaged or edited line (not JSON, not UTF-8, another shape) is skipped."""
    for raw in lines:
        try:
            record = json.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too
            continue
        shaped = isinstance(record, dict) and isinstance(record.get("type"), str)
        if shaped and isinstance(record.get("data", {}), dict):
            yield record


def read_log(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete line of a log; a torn last line (a crash mid-write) is skipped.

    Only a regular file is read (a FIFO or a device raises NotRegularFile, an OSError, at
    once), and at most MAX_LOG_BYTES of it (FileTooLarge)."""
    with open_regular(path) as f:
        yield from _records(_complete_lines(f, path))


def _complete_lines(f: BinaryIO, path: Path) -> Iterator[bytes]:
    read = 0
    while line := f.readline(MAX_LOG_BYTES + 1 - read):
        read += len(line)
        if read > MAX_LOG_BYTES:
            raise FileTooLarge(f"{path} is larger than {MAX_LOG_BYTES:,} bytes: not a run log")
        if not line.endswith(b"\n"):
            return
        yield line


class NotARunLog(ValueError):
    """The file is not a cardrunner run log (it does not open with a `start` line)."""


def checked_records(path: Path) -> list[dict[str, Any]]:
    """The log's records; raises NotARunLog unless the first line is a run's `start`."""
    with open_regular(path) as f:
        _check_head(path, f.readline(MAX_LOG_BYTES))
    return list(read_log(path))


_EVENT: TypeAdapter[ev.Event] = TypeAdapter(ev.Event)


class EventReader:
    """Turns log records back into events one at a time, keeping the sums a `round` line
    leaves out: reading a growing log in pieces gives the same events as reading it whole.

    A `round` line keeps only the round's own usage and cost, so the running totals (and the
    round limit from `start`) are summed again here; a `result` line's flat token counts become
    its `usage`. Lines of a kind this version does not know are skipped (None)."""

    def __init__(self) -> None:
        self._total, self._cost, self._max_rounds = ev.Usage(), 0.0, 0

    def event(self, record: dict[str, Any]) -> ev.Event | None:
        """The record's event, or None for a line of an unknown kind or a damaged one (an
        edited log: values of the wrong type are skipped with their line, never raised)."""
        data: dict[str, Any] = record.get("data") or {}
        fields = {**data, "type": record.get("type"), "time": record.get("time")}
        try:
            if record.get("type") == "round":
                usage = ev.Usage.model_validate(data)
                total, cost = self._total + usage, self._cost + float(data.get("cost_usd") or 0)
                fields |= {"usage": usage, "total_usage": total, "total_cost_usd": cost}
                fields |= {"max_rounds": self._max_rounds, "response": data.get("content")}
            elif record.get("type") == "result":
                fields["usage"] = ev.Usage.model_validate(data)
            event = _EVENT.validate_python(fields)
            if isinstance(event, ev.RunStarted):
                self._max_rounds = int(event.limits.get("max_rounds") or 0)
        except (ValidationError, ValueError, TypeError):
            return None
        if isinstance(event, ev.RoundFinished):
            self._total, self._cost = event.total_usage, event.total_cost_usd
        return event


def read_events(records: Iterable[dict[str, Any]]) -> Iterator[ev.Event]:
    """The log's lines back as the events that wrote them: one reading for resume and `log`."""
    reader = EventReader()
    for record in records:
        event = reader.event(record)
        if event is not None:
            yield event


class LogTail:
    """A run log read as it grows: each `read` returns the records appended since the last.

    Only complete lines are consumed — a line being written is read whole next time — so a
    live run's log costs each reader the new bytes, not the whole file again. The first read
    checks that the file is a run log (NotARunLog), as `checked_records` does."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    @property
    def offset(self) -> int:
        """Bytes consumed so far (a file now shorter than this was replaced, not appended to)."""
        return self._offset

    def read(self) -> list[dict[str, Any]]:
        """Raises OSError when the file cannot be read and NotARunLog when it is no run log."""
        if self._offset >= MAX_LOG_BYTES:
            raise FileTooLarge(f"{self.path} is larger than {MAX_LOG_BYTES:,} bytes")
        with open_regular(self.path) as f:
            f.seek(self._offset)
            chunk = f.read(MAX_LOG_BYTES - self._offset)
        if self._offset == 0:
            _check_head(self.path, chunk.split(b"\n", 1)[0])
        end = chunk.rfind(b"\n") + 1
        self._offset += end
        return list(_records(chunk[:end].split(b"\n")[:-1]))


def _check_head(path: Path, first: bytes) -> None:
    try:
        head = json.loads(first.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NotARunLog(f"{path} is not a run log (not UTF-8 text)") from exc
    except ValueError as exc:
        raise NotARunLog(f"{path} is not a run log (its first line is not JSON)") from exc
    if not (isinstance(head, dict) and head.get("type") == "start" and "data" in head):
        raise NotARunLog(f"{path} is not a run log (it does not start with a `start` line)")


def log_events(path: Path) -> list[ev.Event]:
    """Every event of the run log at `path`; raises NotARunLog unless it is one, or OSError."""
    return list(read_events(checked_records(path)))
