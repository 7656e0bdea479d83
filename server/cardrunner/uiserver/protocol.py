"""The JSON-lines messages between the UI server and the driver process that runs the app.

One JSON object a line on the driver's stdin (requests) and stdout (replies); the driver writes
nothing else to stdout. The first line the driver writes is a `Hello`: the app is running and
ready for requests, or it could not start (the error carries the traceback). After that, every
`Request` is answered by exactly one `Reply` with the same `id`. A reply with `ended` set means
the app has exited (crashed or quit) while handling the request; the driver exits after it.

Kept in its own module, free of Textual and MCP, so both sides share it without importing each
other's heavy dependencies.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Command = Literal["list", "click", "set_text", "read", "press", "select_row", "screenshot"]


class Hello(BaseModel):
    """The driver's first line: started (with a short summary) or failed (with a traceback)."""

    kind: Literal["hello"] = "hello"
    ok: bool
    text: str
    pid: int


class Request(BaseModel):
    """One command for the driver; `args` are the tool's arguments, checked by the driver."""

    id: int
    command: Command
    args: dict[str, Any] = Field(default_factory=dict)


class Reply(BaseModel):
    """The answer to one request: plain text for the model, `ok=False` for an error."""

    kind: Literal["reply"] = "reply"
    id: int
    ok: bool
    text: str
    ended: bool = False


def encode(message: BaseModel) -> bytes:
    """One message as one line of UTF-8 JSON."""
    return message.model_dump_json().encode() + b"\n"


def decode_hello(line: bytes) -> Hello:
    return Hello.model_validate_json(line)


def decode_request(line: bytes) -> Request:
    return Request.model_validate_json(line)


def decode_reply(line: bytes) -> Reply:
    return Reply.model_validate_json(line)
