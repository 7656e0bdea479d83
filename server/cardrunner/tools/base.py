"""How the built-in tools are declared, and the arguments the model may add to a configured command.

A built-in tool is a schema and an async function (`FunctionTool`).

Arguments the model adds to a configured command are data, never options that redirect it
(`check_test_args`). `run_tests(args=["--junitxml=/elsewhere/x.xml"])` would write outside the
repository and `--basetemp=/some/dir` would delete that folder, with no code written at all. So
each argument is one of: a selector (a path or node id inside the read area), an allowed flag, or
an allowed option with its value. Everything else is refused with a message that says what is
allowed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from cardrunner.agent.toolpool import Tool, ToolContext, ToolError, ToolResult
from cardrunner.config.confinement import TestArgs
from cardrunner.git.repo import GitError
from cardrunner.processes.command import CommandError
from cardrunner.tools.guard import PathGuard

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


@dataclass
class Followed:
    """`inner`, with `after` run when a call succeeds and its note added to the result (the
    app restarted after a write: tools/commands.py); the same name, schema and description."""

    inner: Tool
    after: Callable[[], Awaitable[str]]
    extra_seconds: float
    """What `after` may take on top of the inner tool's timeout."""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.inner.input_schema

    @property
    def timeout(self) -> float:
        return self.inner.timeout + self.extra_seconds

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await self.inner.call(arguments, ctx)
        note = "" if result.is_error else await self.after()
        return replace(result, text=f"{result.text}\n{note}") if note else result


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


def _refuse(arg: str, why: str, policy: TestArgs) -> ToolError:
    allowed = ", ".join([*policy.flags, *(f"{v} VALUE" for v in policy.values)])
    return ToolError(
        f"argument {arg!r} is not allowed: {why}. Pass test paths or node ids inside the "
        f"readable folders, and only these options: {allowed}."
    )


def _selector(arg: str, guard: PathGuard, policy: TestArgs, folder: str) -> None:
    """A path or node id (`tests/test_x.py::test_y[1]`) whose path lies in the read area, as
    the test command sees it from `folder` (a monorepo package's, config/packages.py)."""
    if arg.startswith("@"):
        raise _refuse(arg, "an @file would read more options from a file", policy)
    path = arg.split("::", 1)[0]
    path = path if folder == "." else posixpath.join(folder, path)
    try:
        guard.resolve_read(path)
    except ToolError as exc:
        raise _refuse(arg, str(exc).rstrip("."), policy) from exc


def check_test_args(
    args: list[str], policy: TestArgs, guard: PathGuard, folder: str = "."
) -> list[str]:
    """`args` unchanged if every one is allowed; `ToolError` naming the first that is not.
    Paths are the test command's, relative to `folder` (where it runs) in the workspace."""
    expect_value: str | None = None
    for arg in args:
        if expect_value is not None:
            if arg.startswith("-"):
                raise _refuse(arg, f"{expect_value} needs a value, not another option", policy)
            expect_value = None
        elif arg in policy.flags:
            continue
        elif arg in policy.values:
            expect_value = arg
        elif arg.startswith("--") and "=" in arg:
            if arg.split("=", 1)[0] not in policy.values:
                raise _refuse(arg, "that option is not in the allow-list", policy)
        elif arg.startswith("-"):
            raise _refuse(arg, "that option is not in the allow-list", policy)
        else:
            _selector(arg, guard, policy, folder)
    if expect_value is not None:
        raise _refuse(expect_value, "it needs a value after it", policy)
    return list(args)
