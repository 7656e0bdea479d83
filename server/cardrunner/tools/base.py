"""How the built-in tools are declared: a schema and an async function."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cardrunner.agent.gate import ToolContext, ToolError, ToolResult
from cardrunner.git.repo import GitError
from cardrunner.processes.command import CommandError

Handler = Callable[[dict[str, Any], ToolContext], Any]
"""A built-in tool's function: the model's arguments and the call's context in, text out."""


@dataclass
class FunctionTool:
    """A tool made of a schema and an async function: how the built-in tools are declared."""

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Handler
    timeout: float = 120.0

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result = await self.fn(arguments, ctx)
        except (GitError, CommandError) as exc:  # the layers below speak to the model through us
            raise ToolError(str(exc)) from exc
        return result if isinstance(result, ToolResult) else ToolResult(str(result))


def schema(
    properties: dict[str, Any] | None = None, required: Iterable[str] = ()
) -> dict[str, Any]:
    """A closed object schema: unknown arguments are an error the model learns from."""
    return {
        "type": "object",
        "properties": properties or {},
        "required": list(required),
        "additionalProperties": False,
    }
