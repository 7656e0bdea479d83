"""What the fake Messages API answers: scripted responses and injected faults.

A script is either a list played in order or a function of (request body, request index), so a
test can say exactly what the "model" does — including failing the way the real API fails (429
with `retry-after-ms`, 529 overloaded, a hang, an error event or a dropped connection in the
middle of a stream). The same transcript file format is read by the scripted model, so a
transcript recorded for one can drive the other.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from cardrunner.apirules.binding import SignatureBinder

Response: TypeAlias = dict[str, Any]
"""`{"content": [blocks], "stop_reason": "end_turn" | "tool_use" | …, "usage"?: {…}}`."""

FaultKind = Literal["http_error", "delay", "hang", "stream_error", "drop_connection"]
STOP_REASONS = frozenset(
    {
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_STATUS_OF = {v: k for k, v in _ERROR_TYPES.items()}

FILLER: Response = {
    "content": [{"type": "text", "text": "This answer is cut off before it ends, on purpose."}],
    "stop_reason": "end_turn",
}
"""What an interrupted stream carries when its fault names no response of its own."""


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build it with the class methods; every field has a sane default.

    - `http_error`: answer `status` with the API's error body and `headers`.
    - `delay`: wait `seconds`, then answer `response` (or the next scripted step).
    - `hang`: never answer (until the server stops); when streaming, after `after_events` events.
    - `stream_error`: stream `response` (or `FILLER`), then an SSE `event: error` after
      `after_events` events; a non-streaming request gets the matching HTTP error instead.
    - `drop_connection`: send `after_bytes` bytes of the answer, then close the connection.
    """

    kind: FaultKind
    status: int = 500
    error_type: str = "api_error"
    message: str = "Internal server error"
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    after_events: int = 0
    after_bytes: int = 0
    response: Response | None = None
    details: Mapping[str, Any] | None = None
    """`error.details` of the error body (e.g. `{"error_code": "enforced_spend_limit_reached"}`)."""

    @classmethod
    def http_error(
        cls,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        retry_after_ms: int | None = None,
        retry_after: float | None = None,
        should_retry: bool | None = None,
    ) -> Fault:
        """An HTTP error; `retry-after-ms`, `retry-after` and `x-should-retry` if given."""
        headers: dict[str, str] = {}
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        if retry_after is not None:
            headers["retry-after"] = str(retry_after)
        if should_retry is not None:
            headers["x-should-retry"] = "true" if should_retry else "false"
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        text = message or kind.replace("_", " ").capitalize()
        return cls("http_error", status=status, error_type=kind, message=text, headers=headers)

    @classmethod
    def rate_limited(cls, retry_after_ms: int = 50) -> Fault:
        """429 `rate_limit_error` with `retry-after-ms` (the SDK waits that long, then retries)."""
        return cls.http_error(
            429,
            "Number of request tokens has exceeded your rate limit",
            retry_after_ms=retry_after_ms,
        )

    @classmethod
    def spend_limit(cls) -> Fault:
        """429 for a spend limit: `rate_limit_error` with no `retry-after`; waiting won't help."""
        return cls(
            "http_error",
            status=429,
            error_type="rate_limit_error",
            message="You have reached your specified API usage limits. You will regain access "
            "on 2027-01-01 at 00:00 UTC.",
            details={"error_code": "enforced_spend_limit_reached"},
        )

    @classmethod
    def overloaded(cls, should_retry: bool | None = None) -> Fault:
        """529 `overloaded_error`, as the API sends under load."""
        return cls.http_error(529, "Overloaded", should_retry=should_retry)

    @classmethod
    def server_error(cls, should_retry: bool | None = None) -> Fault:
        """500 `api_error`."""
        return cls.http_error(500, "Internal server error", should_retry=should_retry)

    @classmethod
    def delay(cls, seconds: float, then: Response | None = None) -> Fault:
        """Answer late (for client time-outs that may still succeed)."""
        return cls("delay", seconds=seconds, response=then)

    @classmethod
    def hang(cls, after_events: int = 0) -> Fault:
        """Never answer; a stream stalls after `after_events` events."""
        return cls("hang", after_events=after_events)

    @classmethod
    def stream_error(
        cls,
        after_events: int = 3,
        error_type: str = "overloaded_error",
        message: str = "Overloaded",
        response: Response | None = None,
    ) -> Fault:
        """An SSE `event: error` in the middle of a stream (the SDK does not retry it)."""
        status = _STATUS_OF.get(error_type, 500)
        return cls(
            "stream_error",
            status=status,
            error_type=error_type,
            message=message,
            after_events=after_events,
            response=response,
        )

    @classmethod
    def drop_connection(cls, after_bytes: int = 200, response: Response | None = None) -> Fault:
        """Close the connection after `after_bytes` bytes of the answer."""
        return cls("drop_connection", after_bytes=after_bytes, response=response)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fault:
        """A fault from a transcript: `{"kind": "http_error", "status": 529, ...}`."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown or data.get("kind") not in FaultKind.__args__:  # type: ignore[attr-defined]
            raise ValueError(f"not a fault: {dict(data)!r}")
        if data["kind"] == "http_error" and "error_type" not in data:
            data = {**data, "error_type": _ERROR_TYPES.get(int(data.get("status", 500)))}
        return cls(**{k: v for k, v in data.items() if v is not None})

    def error_body(self) -> dict[str, Any]:
        """The API's error body for this fault."""
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}


Step: TypeAlias = Response | Fault
Responder: TypeAlias = Sequence[Step] | Callable[[dict[str, Any], int], Step | Awaitable[Step]]


def load_transcript(path: str | Path) -> list[Step]:
    """Read `{"responses": [ {content, stop_reason} | {"fault": {...}}, ... ]}`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    entries = data.get("responses") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{path}: expected {{'responses': [{{'content': [...]}}, ...]}}")
    return [Fault.from_dict(e["fault"]) if "fault" in e else e for e in entries]


class Script:
    """Hands out steps in order (a list) or asks the responder function."""

    def __init__(self, responder: Responder) -> None:
        self._function = responder if callable(responder) else None
        self._steps: list[Step] = [] if callable(responder) else list(responder)
        self.used = 0

    @property
    def remaining(self) -> int | None:
        """Steps not played yet (None for a responder function)."""
        return None if self._function else len(self._steps) - self.used

    async def next(self, body: dict[str, Any], index: int) -> Step | None:
        """The next step, or None when the list is exhausted."""
        if self._function is not None:
            step = self._function(body, index)
            self.used += 1
            return await step if inspect.isawaitable(step) else step
        if self.used >= len(self._steps):
            return None
        self.used += 1
        return self._steps[self.used - 1]


class ResponseBuilder:
    """Completes scripted content the way the real API would have produced it."""

    def __init__(self, binder: SignatureBinder | None = None) -> None:
        self._ids = itertools.count(1)
        self._binder = binder or SignatureBinder()

    def content(
        self, response: Response, body: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The blocks with ids filled in and every thinking block signed, bound to the request
        `body` that it answers; ValueError for an impossible block."""
        blocks: list[dict[str, Any]] = []
        for raw in response.get("content", []):
            block = dict(raw)
            kind = block.get("type")
            if kind == "tool_use":
                block.setdefault("id", f"toolu_{next(self._ids)}")
                block.setdefault("input", {})
                if not isinstance(block.get("name"), str) or not isinstance(block["input"], dict):
                    raise ValueError(f"scripted tool_use needs a name and an object input: {raw}")
            elif kind == "thinking":
                block.setdefault("thinking", "")
            elif kind == "text":
                if not isinstance(block.get("text"), str):
                    raise ValueError(f"scripted text block needs text: {raw}")
            elif kind != "redacted_thinking":
                raise ValueError(f"a model cannot answer with a {kind!r} block: {raw}")
            blocks.append(block)
        self._binder.sign_response(body or {}, blocks)
        return blocks

    @staticmethod
    def stop_reason(response: Response, content: list[dict[str, Any]]) -> str:
        """The scripted stop reason, else `tool_use` when a tool is called, else `end_turn`."""
        reason = response.get("stop_reason")
        if reason is None:
            return "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        if reason not in STOP_REASONS:
            raise ValueError(f"unknown stop_reason {reason!r}")
        return str(reason)
