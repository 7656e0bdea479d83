"""The model port: one request in, one response out.

`Conversation` holds the messages exactly as they were sent and received (assistant content is
never re-serialised or edited, so thinking blocks and their signatures survive). `build_body`
turns a request into the Messages API body — the only place that decides cache breakpoints and
what is sent, shared by the real model and the scripted one so tests check the real shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from cardrunner.agent.events import Usage

Block = dict[str, Any]
"""A content block in wire format. Kept as data on purpose: it must round-trip byte-exact."""


@dataclass
class Message:
    role: str
    content: list[Block]

    def wire(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


@dataclass
class ModelRequest:
    """What the loop asks: the model sees the system prompt, the tools and the conversation."""

    system: str
    tools: list[dict[str, Any]]
    messages: list[Message]
    max_tokens: int
    thinking: str = "adaptive"
    effort: str | None = None
    cache: bool = True
    display: str | None = None
    """`thinking.display` ("summarized" | "omitted"); None leaves the model's default."""
    time_left: float | None = None
    """Seconds left of the run's wall budget (None: no wall budget); retries wait no longer."""
    drop_mismatched_thinking: bool = False
    """Opt into `drop_block`: thinking that fails the prefix check is dropped, not a 400.
    An escape hatch for conversations rebuilt from old logs; it costs tokens and quality."""


@dataclass
class ModelResponse:
    """One assistant turn exactly as received, with its usage."""

    content: list[Block]
    stop_reason: str | None
    usage: Usage
    model: str = ""
    id: str = ""
    body: dict[str, Any] = field(default_factory=dict)
    """The request body that produced it (for logs and tests)."""
    transformations: list[dict[str, Any]] = field(default_factory=list)
    """What the API changed in the request before answering it (`input_transformations`):
    thinking blocks it dropped under `drop_block` instead of refusing the request."""


class ModelError(Exception):
    """The model could not answer (after the SDK's own retries): the run ends `api_error`.

    `said` is the endpoint's own text, whole (the message is cardrunner's words and may cut
    it): the loop logs it as a notice."""

    def __init__(self, message: str, said: str = "") -> None:
        super().__init__(message)
        self.said = said


class WindowExceeded(ModelError):
    """The request does not fit the context window: by cardrunner's own count (nothing was
    sent), or by the endpoint's answer. The loop compacts and tries once more, as after the
    API's `model_context_window_exceeded`."""

    def __init__(self, message: str, *, needed: int = 0, window: int = 0, said: str = "") -> None:
        super().__init__(message, said)
        self.needed, self.window = needed, window


class Model(Protocol):
    """The one port through which the loop reaches a language model."""

    @property
    def name(self) -> str: ...

    async def respond(self, request: ModelRequest) -> ModelResponse: ...
