"""What crosses between the language server and a run's worker process: one JSON object a line.

The run executes in a worker (`workers/program.py`), the editor's server only subscribes
(`workers/handle.py`). Between them goes exactly what a run needs of the editor and nothing else:

- server → worker: `warm` (to a spare only, first: which adapters to import before its run is
  asked for, `workers/spare.py`), `start` (the run's options), `response` (to a request), `cancel`
  (with the interruption's reason, or none for the user's cancel);
- worker → server: `ready` (a spare's imports are done), `started` (the `start` was read: from
  here on the run is the worker's), `event` (the run-event contract: the run log's
  `{"time", "type", "data"}` envelope, with every field of the event, so transient events and
  running totals cross too), `request` (`review`, `update_card` or `trust`, answered by id).

Reviews, card writes and the trust question cross as requests because the approver, the card
store and the user's consent belong to the editor (its buffers, its questions); everything else a
run touches it owns itself.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from cardrunner.agent import events as ev
from cardrunner.agent.review import HunkRef, Proof, ReviewDecision, ReviewRequest
from cardrunner.card.record import KEEP, CardUpdate, RunRecord
from cardrunner.trust.consent import TrustQuestion

Method = Literal["review", "update_card", "trust"]


class WarmUp(BaseModel):
    """What a spare worker imports while it waits: what the settings' runs will need."""

    kind: Literal["warm"] = "warm"
    api: bool
    """The Messages API's SDK (no `replay` transcripts in the settings)."""
    mcp: bool
    """The MCP client (the settings name MCP servers)."""


class StartRun(BaseModel):
    """Everything the worker needs to build the run's `RunOptions` (the ports are remote)."""

    root: str
    card_path: str
    settings: dict[str, Any]
    run_id: str | None = None
    resume_rounds: int | None = None
    """None: a fresh run; a number (0 too): resume with this many extra rounds."""
    resume_cost_usd: float = 0.0
    env: dict[str, str]
    """Where the API key is looked up (the manager's environment, which a test may replace)."""


def line(message: dict[str, Any]) -> bytes:
    """One message as the bytes of one line."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def encode_event(event: ev.Event) -> dict[str, Any]:
    """The event in the run log's envelope, with all its fields (the log keeps fewer)."""
    data = event.model_dump(mode="json", exclude={"time", "type"})
    return {"time": event.time.isoformat().replace("+00:00", "Z"), "type": event.type, "data": data}


_EVENT: TypeAdapter[ev.Event] = TypeAdapter(ev.Event)


def decode_event(record: dict[str, Any]) -> ev.Event:
    """The event `encode_event` wrote; raises pydantic's ValidationError on anything else."""
    return _EVENT.validate_python(
        {**(record.get("data") or {}), "type": record.get("type"), "time": record.get("time")}
    )


def encode_review(request: ReviewRequest) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(request).items()}


def decode_review(data: dict[str, Any]) -> ReviewRequest:
    paths = {"card_path": Path(data["card_path"]), "root": Path(data["root"])}
    proof = {  # JSON's keys are text; a criterion's proof is its own type again
        int(k): Proof(str(v.get("checked", "")), tuple(map(str, v.get("screenshots", ()))))
        for k, v in (data.get("proof") or {}).items()
    }
    return ReviewRequest(**{**data, **paths, "proof": proof})


def encode_decision(decision: ReviewDecision) -> dict[str, Any]:
    return asdict(decision)


def decode_decision(data: dict[str, Any]) -> ReviewDecision:
    hunks = [HunkRef(str(h["path"]), int(h["index"])) for h in data.get("drop_hunks") or []]
    return ReviewDecision(
        data["decision"],
        str(data.get("reason") or ""),
        list(data.get("drop") or []),
        hunks,
        acknowledged=bool(data.get("acknowledged")),  # the editor showed the warnings
    )


def encode_update(path: Path, change: CardUpdate) -> dict[str, Any]:
    keep = change.reason is KEEP
    return {
        "path": str(path),
        "state": change.state,
        "keep_reason": keep,
        "reason": None if keep else change.reason,
        "run": change.run.values() if change.run is not None else None,
    }


def decode_update(data: dict[str, Any]) -> tuple[Path, CardUpdate]:
    run = RunRecord.read(data["run"]) if data.get("run") is not None else None
    reason = KEEP if data.get("keep_reason") else data.get("reason")
    return Path(data["path"]), CardUpdate(state=data.get("state"), reason=reason, run=run)


def encode_question(question: TrustQuestion) -> dict[str, Any]:
    return {**asdict(question), "root": str(question.root)}


def decode_question(data: dict[str, Any]) -> TrustQuestion:
    return TrustQuestion(
        Path(data["root"]),
        [str(i) for i in data["items"]],
        str(data["fingerprint"]),
        changed=bool(data.get("changed")),
    )


SERVER_GONE = "the language server went away"


class ServerGone(Exception):
    """The server's end of the pipe closed: no request can be answered any more."""


HOLD_SECONDS = 0.02
"""How long an event may wait for the events after it, so that a round's events reach the
server in one write: every write wakes the editor's server, and on a loaded machine each
wake-up waits for a core that a request then waits for too. The server shows a run at most
every 100 ms (`lsp/features/runs.py`), so the wait is never seen."""


class Channel:
    """Lines to the server on one descriptor, requests answered by id from the other."""

    def __init__(self, out: asyncio.StreamWriter) -> None:
        self._out = out
        self._next = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._held: list[bytes] = []
        """Lines sent with `hold`, not written yet (in order)."""
        self._timer: asyncio.TimerHandle | None = None
        self.closed = False

    async def send(self, message: dict[str, Any], hold: bool = False) -> None:
        """Write `message` after what is held; with `hold` it waits up to `HOLD_SECONDS` for
        the lines after it (only a full pipe makes the caller wait: the server reads slowly)."""
        if self.closed:
            return
        self._held.append(line(message))
        if not hold:
            self._write_held()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(HOLD_SECONDS, self._write_held)
        try:
            await self._out.drain()
        except (ConnectionError, OSError):
            self.gone()

    def _write_held(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        data, self._held = b"".join(self._held), []
        if data and not self.closed:
            self._out.write(data)

    async def flush(self) -> None:
        """Write what is held and wait until it has left (the end of the worker)."""
        self._write_held()
        await self._out.drain()

    async def request(self, method: Method, params: dict[str, Any]) -> Any:
        if self.closed:
            raise ServerGone(SERVER_GONE)
        self._next += 1
        answer = self._waiting[self._next] = asyncio.get_running_loop().create_future()
        try:
            await self.send({"kind": "request", "id": self._next, "method": method, **params})
            return await answer
        finally:
            self._waiting.pop(self._next, None)

    def answered(self, message: dict[str, Any]) -> None:
        answer = self._waiting.get(int(message.get("id", -1)))
        if answer is None or answer.done():
            return
        if message.get("error"):
            answer.set_exception(RuntimeError(str(message["error"])))
        else:
            answer.set_result(message.get("result"))

    def gone(self) -> None:
        self.closed = True
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(ServerGone(SERVER_GONE))
