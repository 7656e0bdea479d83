"""Writing the fake's answers to the wire, including the faulty ones.

Kept apart from the request handling so the byte-level behaviour — a JSON body cut off after N
bytes, a stream that stalls, ends in `event: error`, or loses its connection — is in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cardrunner.testing.fake_script import Fault
from cardrunner.testing.fake_sse import encode, message_events

if TYPE_CHECKING:
    from aiohttp import web


def error_reply(
    status: int,
    kind: str,
    message: str,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
) -> web.Response:
    """The API's error body: `{"type": "error", "error": {"type": kind, "message": ...}}`."""
    from aiohttp import web

    error: dict[str, Any] = {"type": kind, "message": message}
    if details:
        error["details"] = dict(details)
    body = {"type": "error", "error": error}
    return web.json_response(body, status=status, headers=dict(headers or {}))


async def wait_closing(closing: asyncio.Event, seconds: float | None) -> None:
    """Sleep `seconds` (None: forever), cut short when the server stops."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await closing.wait()


async def send_json(
    request: web.Request, message: dict[str, Any], fault: Fault | None, closing: asyncio.Event
) -> web.StreamResponse:
    """A non-streaming answer, or its faulty variant."""
    from aiohttp import web

    if fault is not None and fault.kind == "stream_error":
        return error_reply(fault.status, fault.error_type, fault.message)
    if fault is not None and fault.kind == "hang":
        await wait_closing(closing, None)
        return web.Response(status=503)
    data = json.dumps(message).encode()
    response = web.StreamResponse(headers=_headers("application/json", message))
    response.content_length = len(data)
    await response.prepare(request)
    if fault is not None and fault.kind == "drop_connection":
        await response.write(data[: fault.after_bytes])
        _drop(request)
        return response
    await response.write(data)
    await response.write_eof()
    return response


async def send_stream(
    request: web.Request, message: dict[str, Any], fault: Fault | None, closing: asyncio.Event
) -> web.StreamResponse:
    """A server-sent-event stream of `message`, interrupted as `fault` says."""
    from aiohttp import web

    response = web.StreamResponse(headers=_headers("text/event-stream", message))
    await response.prepare(request)
    events = message_events(message)
    stop_at = min(fault.after_events, len(events) - 1) if fault is not None else -1
    sent = 0
    for n, (name, data) in enumerate(events):
        if fault is not None and n == stop_at and fault.kind == "stream_error":
            await response.write(encode("error", fault.error_body()))
            break
        if fault is not None and n == stop_at and fault.kind == "hang":
            await wait_closing(closing, None)
            return response
        frame = encode(name, data)
        dropping = fault is not None and fault.kind == "drop_connection"
        if fault is not None and dropping and sent + len(frame) >= fault.after_bytes:
            await response.write(frame[: fault.after_bytes - sent])
            _drop(request)
            return response
        await response.write(frame)
        sent += len(frame)
    await response.write_eof()
    return response


def _headers(content_type: str, message: dict[str, Any]) -> dict[str, str]:
    return {
        "content-type": content_type,
        "cache-control": "no-cache",
        "request-id": f"req_{message['id'].removeprefix('msg_')}",
    }


def _drop(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.close()
