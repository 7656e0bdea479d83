"""The run log: one JSON object a line, written as the run goes.

`.cardrunner/runs/<run-id>.jsonl`, each line `{"time", "type", "data"}` (DESIGN.md). Every line is
flushed when written, so a crash loses at most the line being written. The log is a subscriber
of the event stream like any front end, and it holds enough (assistant content exactly as
received, every tool result exactly as sent, compactions) to resume or replay a run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from cardrunner.agent.events import (
    BuildChecked,
    Compacted,
    CriterionReported,
    Event,
    Notice,
    ReviewDecided,
    ReviewRequested,
    RoundFinished,
    RoundStarted,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
)
from cardrunner.card.card import card_slug
from cardrunner.config.paths import StatePaths
from cardrunner.config.secrets import redact


def new_run_id(root: Path, card_path: Path, taken: Collection[str] = ()) -> str:
    """`<UTC time>-<card slug>`, with `-2`, `-3` … when a log or a run in `taken` has it already.

    The one place run ids are made: the editor names a run before it starts, the CLI when it
    starts; both must give ids that sort by time and never reuse another run's log."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{card_slug(card_path)}"[:76]
    paths = StatePaths(root)
    run_id, n = base, 1
    while run_id in taken or paths.log(run_id).exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def log_record(event: Event) -> dict[str, Any] | None:
    """The log line for `event`, or None for transient events the log does not keep."""
    match event:
        case RoundStarted() | ToolStarted():
            return None
        case RoundFinished():
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
        case RunFinished():  # flat token counts, as DESIGN.md's log contract has them
            data = event.model_dump(mode="json", exclude={"time", "type", "usage"})
            data.update(event.usage.model_dump())
        case (
            RunStarted()
            | ToolFinished()
            | CriterionReported()
            | BuildChecked()
            | ReviewRequested()
            | ReviewDecided()
            | Compacted()
            | Notice()
        ):
            data = event.model_dump(mode="json", exclude={"time", "type"})
    return {"time": event.time.isoformat().replace("+00:00", "Z"), "type": event.type, "data": data}


class RunLog:
    """Appends events to one run's JSONL file. Write errors propagate (the run must stop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def write(self, event: Event) -> None:
        record = log_record(event)
        if record is None or self._file is None:
            return
        line = redact(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def read_log(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete line of a log; a torn last line (a crash mid-write) is skipped."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                return
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "type" in record:
                yield record


class NotARunLog(ValueError):
    """The file is not a cardrunner run log (it does not open with a `start` line)."""


RESULT_TOKEN_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
"""Every token a run used, cached or not: the same sum the card and the live view show."""


def checked_records(path: Path) -> list[dict[str, Any]]:
    """The log's records; raises NotARunLog unless the first line is a run's `start`."""
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
        head = json.loads(first)
    except UnicodeDecodeError as exc:
        raise NotARunLog(f"{path} is not a run log (not UTF-8 text)") from exc
    except ValueError as exc:
        raise NotARunLog(f"{path} is not a run log (its first line is not JSON)") from exc
    if not (isinstance(head, dict) and head.get("type") == "start" and "data" in head):
        raise NotARunLog(f"{path} is not a run log (it does not start with a `start` line)")
    return list(read_log(path))


def summarize_log(path: Path) -> str:
    """A readable account of a run (what `cardrunner log` prints).

    Raises OSError when the file cannot be read and NotARunLog when it is something else.
    """
    out: list[str] = []
    for rec in checked_records(path):
        d, t = rec.get("data", {}), rec["type"]
        if t == "start":
            out.append(f"run {d.get('run_id')} · card {d.get('card')} · model {d.get('model')}")
            out.append(f"  tools: {', '.join(d.get('tools', []))}")
            for w in d.get("warnings", []):
                out.append(f"  warning: {w}")
        elif t == "round":
            cache = d.get("cache_read_input_tokens", 0)
            out.append(
                f"round {d['round']:>3}  {d['ms']:>6} ms  in {d['input_tokens']:>7,}  "
                f"cache {cache:>7,}  out {d['output_tokens']:>6,}  ${d['cost_usd']:.4f}  "
                f"{d.get('stop_reason')}  {', '.join(d.get('calls', []))}"
            )
        elif t == "tool":
            first = (d.get("result") or "").strip().splitlines()[:1]
            mark = "✗" if d.get("is_error") else "·"
            args = json.dumps(d.get("arguments", {}), ensure_ascii=False)[:70]
            out.append(
                f"   {mark} {d['name']}({args}) {d['ms']} ms → {first[0][:80] if first else ''}"
            )
        elif t == "criterion":
            out.append(
                f"   criterion {d['index']}: {'passed' if d['passed'] else 'FAILED'} — {d['evidence'][:100]}"
            )
        elif t == "review":
            out.append(
                f"   review: {d['decision']} {d.get('reason') or ''} {d.get('commit') or ''}".rstrip()
            )
        elif t == "compaction":
            out.append(
                f"   compaction ({d['kind']}): {d['tokens_before']:,} → {d['tokens_after']:,} tokens"
            )
        elif t == "result":
            status = (
                "DONE"
                if d["status"] == "done"
                else f"FAILED ({d.get('reason')}: {d.get('detail')})"
            )
            out.append(
                f"result: {status} · {d['rounds']} rounds · {d['tool_calls']} tool calls · "
                f"{sum(d.get(k, 0) for k in RESULT_TOKEN_KEYS):,} tokens "
                f"(cache read {d.get('cache_read_input_tokens', 0):,}) · ${d['cost_usd']:.4f}"
                + (f" · commit {d['commit'][:10]}" if d.get("commit") else "")
            )
    return "\n".join(out)
