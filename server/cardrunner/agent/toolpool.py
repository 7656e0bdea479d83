"""What every tool is, built-in or from an MCP server, and the one gate they all pass through.

A tool is a name, a description, a JSON schema and an async `call`. The gate (`ToolPool.execute`)
is the only place that validates arguments, applies time-outs, turns every failure into an
`is_error` result the model can act on, and cuts output to the size the model should see. Built-in
and MCP tools therefore look and behave exactly alike to the model and to the user.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cardrunner.agent.events import Event
from cardrunner.config.secrets import redact

MAX_RESULT_CHARS = 4000
"""Tool output longer than this is cut; every later round would pay for it again."""

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
"""What the Messages API accepts as a tool name (the request validator checks the same)."""


class ToolError(Exception):
    """An expected failure: its message goes to the model as an `is_error` result."""


@dataclass(frozen=True)
class Image:
    """An image a tool produced, passed to the model as image content (base64)."""

    media_type: str
    data: str


@dataclass
class ToolResult:
    """The outcome of one call, as plain text for the model."""

    text: str
    is_error: bool = False
    images: list[Image] = field(default_factory=list)
    announce: str = ""
    """Something the model must be told apart from this result (e.g. an MCP server's tool list
    changed): the loop adds it as a message at the end of the conversation."""


@dataclass
class ToolContext:
    """What a running tool may use besides its arguments: the round, and a way to emit events."""

    round: int
    emit: Callable[[Event], None]
    tool_use_id: str = ""
    """The id of the call the model made: what evidence cites to name the call it rests on."""


class Tool(Protocol):
    """One callable capability. Raise `ToolError` for failures the model should read."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...

    @property
    def timeout(self) -> float: ...

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


def truncate(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Cut `text` to `limit` characters with a note that tells the model how to ask for less."""
    if len(text) <= limit:
        return text
    note = (
        f"\n[output cut: showed {limit} of {len(text)} characters. Ask for less: a narrower "
        "folder, a single file, or a more specific element id.]"
    )
    return text[: limit - len(note)] + note


_validators: dict[int, tuple[dict[str, Any], Any]] = {}


def preload() -> None:
    """Import the validator now (a spare worker, `workers/spare.py`, pays before its run)."""
    importlib.import_module("jsonschema")


def _validator(tool_schema: dict[str, Any]) -> Any:
    """One compiled validator per schema object (building one costs far more than using it)."""
    cached = _validators.get(id(tool_schema))
    if cached is None or cached[0] is not tool_schema:
        import jsonschema  # lazy: only needed once a run has started

        cached = (tool_schema, jsonschema.Draft202012Validator(tool_schema))
        _validators[id(tool_schema)] = cached
    return cached[1]


def _validation_error(tool_schema: dict[str, Any], arguments: Any) -> str | None:
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    validator = _validator(tool_schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    parts = []
    for err in errors[:5]:
        where = "/".join(str(p) for p in err.path) or "(arguments)"
        parts.append(f"{where}: {err.message}")
    return "; ".join(parts)


class CallObserver(Protocol):
    """Sees every finished call with the exact result the model gets (the runner's own record).

    The runner must not take the model's word for what a tool said: evidence is checked against
    what the observer saw, so it is told before the result goes back to the model.
    """

    async def observe(
        self, name: str, arguments: Any, ctx: ToolContext, result: ToolResult
    ) -> None: ...


class ToolPool:
    """All tools of one run by name; the single gate every call goes through."""

    def __init__(self, tools: Iterable[Tool] = (), observers: Iterable[CallObserver] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.observers: list[CallObserver] = list(observers)
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> bool:
        """Add `tool` unless the name is taken (built-ins are added first, so they win)."""
        if tool.name in self._tools:
            return False
        self._tools[tool.name] = tool
        return True

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> list[dict[str, Any]]:
        """Tool definitions in the shape the Messages API takes."""
        return [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in self._tools.values()
        ]

    async def execute(self, name: str, arguments: Any, ctx: ToolContext) -> ToolResult:
        """Run one call. Never raises (except cancellation): every failure becomes `is_error`."""
        raw = await self._execute(name, arguments, ctx)
        # redacted here, not only in the log: the log must hold exactly what was sent, or a
        # resume would send other text and the thinking after it would fail the prefix check.
        # Every result: an error can quote a file or a command's output just as well.
        text = truncate(redact(raw.text))
        result = ToolResult(text, raw.is_error, raw.images, redact(raw.announce))
        for observer in self.observers:
            await observer.observe(name, arguments, ctx, result)
        return result

    async def _execute(self, name: str, arguments: Any, ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools))
            return ToolResult(f"Unknown tool {name!r}. Available tools: {known}", is_error=True)
        problem = _validation_error(tool.input_schema, arguments)
        if problem is not None:
            return ToolResult(
                f"Invalid arguments for {name}: {problem}. Expected schema: "
                f"{json.dumps(tool.input_schema, separators=(',', ':'))}",
                is_error=True,
            )
        try:
            async with asyncio.timeout(tool.timeout):
                result = await tool.call(arguments, ctx)
        except TimeoutError:
            return ToolResult(
                f"{name} did not finish within {tool.timeout:g} s and was stopped.", is_error=True
            )
        except ToolError as exc:
            return ToolResult(str(exc) or f"{name} failed", is_error=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a crashing tool must not end the run
            return ToolResult(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return result
