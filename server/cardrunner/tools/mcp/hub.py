"""Tools from MCP servers, looking to the model exactly like the built-in ones.

`McpHub` starts every configured server at once (one slow server does not delay the others),
offers each server tool as `mcp__<server>__<tool>` and turns each call into plain text. Servers
are untrusted neighbours: a stdio server runs in the workspace root (a browser driver in its own
folder of the run's, `run_dir/mcp/<server>/`) with a minimal environment
(basics like PATH and HOME, our interpreter's folder first on PATH, `CARDRUNNER_RUN_DIR`, which
`${CARDRUNNER_RUN_DIR}` in its args names too; no API
keys unless the configuration passes them on, `${VAR}` style — and a secret-looking `${VAR}` only
for a server the user's own config defines, never a repository's), its stderr goes to
`run_dir/mcp/<server>.stderr.log`, and no server process outlives the run. A server an ACP
client passed in gets the same confinement; only its values are taken as the client sent them. A server that fails to start is reported and left out,
unless it is `required`, in which case the run cannot sensibly go on (`McpStartError`).

Usage:
    async with McpHub(settings.mcp, run_dir, root, groups=ProcessGroups()) as hub:
        pool = ToolPool([*builtins, *hub.tools()])
        warnings = [*hub.warnings, *hub.failures.values()]
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cardrunner.agent.events import Notice
from cardrunner.agent.toolpool import TOOL_NAME_RE, Tool, ToolContext, ToolResult
from cardrunner.config.settingsfiles import VAR, secret_refusal
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox, filter_env
from cardrunner.tools.mcp.connection import CallTimeout, ServerConnection, ServerUnavailable
from cardrunner.tools.mcp.results import ResultConverter, describe, tool_change
from cardrunner.tools.mcp.transport import Launch
from cardrunner.verify.observed import drives_browser

if TYPE_CHECKING:
    import mcp_types

    from cardrunner.config.settingsfiles import McpServer

__all__ = ["McpHub", "McpStartError", "McpTool"]

TIMEOUT_MARGIN = 5.0
"""The gate's timeout is the server's start and call timeouts (a restart, then the call) plus
this margin, so the hub's own, clearer timeout message wins."""

_INVALID = re.compile(r"[^a-zA-Z0-9_-]")

RUN_DIR_VAR = "CARDRUNNER_RUN_DIR"


class McpStartError(Exception):
    """A `required` server did not start; the run ends with `config_error`."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"required MCP server '{server}' failed to start: {message}")
        self.server = server
        self.message = message


@dataclass(frozen=True)
class McpTool:
    """One server tool as the model sees it; calls go through the hub."""

    name: str
    description: str
    input_schema: dict[str, Any]
    timeout: float
    server: str
    remote_name: str
    hub: McpHub = field(repr=False, compare=False)

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.hub.call(self.server, self.remote_name, arguments, ctx)


class McpHub:
    """All MCP servers of one run. Start and close it in the same task; call from any task."""

    def __init__(
        self, servers: Mapping[str, McpServer], run_dir: Path, root: Path,
        environ: Mapping[str, str] | None = None, *, groups: ProcessGroups,
        sandbox: Sandbox | None = None,
    ) -> None:  # fmt: skip
        self._specs = dict(servers)
        self._groups = groups
        self._sandbox = sandbox
        """Stdio servers from project config run code of the project: confined like a build."""
        self._run_dir = run_dir
        self._root = root
        self._environ = os.environ if environ is None else environ
        self._own = {RUN_DIR_VAR: str(run_dir)}
        """What cardrunner itself fills in: `${CARDRUNNER_RUN_DIR}` names this run's folder, so a
        server's files (a browser's snapshots) can go there and never into the work tree."""
        self._converter = ResultConverter(run_dir, root)
        self._connections: dict[str, ServerConnection] = {}
        self._tools: list[McpTool] = []
        self.warnings: list[str] = []
        """Tools left out or renamed; show them to the user (e.g. in RunStarted.warnings)."""
        self.failures: dict[str, str] = {}
        """Server name → why it did not start (with the stderr tail for stdio servers)."""

    async def __aenter__(self) -> McpHub:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every server in parallel; raise McpStartError if a required one failed."""
        try:
            listed = await asyncio.gather(*(self._start_one(n, s) for n, s in self._specs.items()))
        except BaseException:
            await self.aclose()
            raise
        for name, tools in zip(self._specs, listed, strict=True):
            if tools is not None:
                self._add_tools(name, tools)
        required = [n for n in self._specs if self._specs[n].required and n in self.failures]
        if required:
            await self.aclose()
            raise McpStartError(required[0], self.failures[required[0]])

    async def _start_one(self, name: str, spec: McpServer) -> list[mcp_types.Tool] | None:
        try:
            launch = self._launch(name, spec)
        except ValueError as exc:
            self.failures[name] = f"{exc} (configured in {spec.source})"
            return None
        conn = ServerConnection(name, spec, launch)
        self._connections[name] = conn
        try:
            return await conn.start()
        except ServerUnavailable as exc:
            self.failures[name] = str(exc)
            return None

    def _launch(self, name: str, spec: McpServer) -> Launch:
        """argv and environment of a stdio server, or url and headers; `${VAR}` from our env,
        but a secret-looking one only for a server the user's own config defines."""
        if not (spec.users_own or spec.from_client) and (uses := spec.secret_uses()):
            raise ValueError(secret_refusal(uses[0]))
        stderr_path = self._run_dir / "mcp" / f"{_INVALID.sub('_', name)}.stderr.log"
        if spec.url:
            headers = {k: self._expand(v, f"headers.{k}", spec) for k, v in spec.headers.items()}
            url = self._expand(spec.url, "url", spec)
            return Launch(None, {}, self._root, stderr_path, self._groups, url, headers)
        env = filter_env(self._environ, self._sandbox.env_names if self._sandbox else ())
        # Like build and test commands, `python` in a server's command is our interpreter.
        env["PATH"] = os.pathsep.join(
            filter(None, [str(Path(sys.executable).parent), env.get("PATH")])
        )
        env[RUN_DIR_VAR] = str(self._run_dir)
        env.update({k: self._expand(v, f"env.{k}", spec) for k, v in spec.env.items()})
        command = self._expand(spec.command or "", "command", spec)
        cwd = self._cwd(name, spec)
        if "/" in command and not Path(command).is_absolute():
            command = self._in_tree(command)
        args = [self._expand(a, "args", spec) for a in spec.args]
        argv = [command, *(args if cwd == self._root else map(self._from_tree, args))]
        if self._sandbox is not None:
            if self._sandbox.mode == "bwrap":
                env["TMPDIR"] = "/tmp"
            try:
                argv = self._sandbox.wrap(argv, cwd, env)
            except OSError as exc:
                raise ValueError(f"command not found or not executable: {command}") from exc
        return Launch(argv, env, cwd, stderr_path, self._groups)

    def _cwd(self, name: str, spec: McpServer) -> Path:
        """Where a stdio server runs: the work root; a browser driver in a folder of the run's
        own. Playwright MCP resolves a `filename` the model passes (a screenshot, a PDF,
        `browser_find`'s results, an upload) against its cwd and allows nothing outside it and
        its `--output-dir`: in the work tree that would write into the review and the commit,
        or read the source; here it reaches neither, nor the evidence saved beside it."""
        if not drives_browser(name, spec):
            return self._root
        folder = self._run_dir / "mcp" / _INVALID.sub("_", name)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _from_tree(self, arg: str) -> str:
        """A browser server's argument that names a file of the tree by a relative path
        (`--config pw.json`, `--init-script=x.js`) names it from the server's own folder too."""
        flag, eq, value = arg.rpartition("=") if arg.startswith("-") else ("", "", arg)
        if not value or Path(value).is_absolute() or not os.path.lexists(self._root / value):
            return arg
        found = self._root / value
        return flag + eq + str(self._sandbox.inside(found) if self._sandbox else found)

    def _in_tree(self, command: str) -> str:
        """A relative program path names a file of the tree, whatever the server's cwd; in a
        worktree without it, the checkout's (`node_modules` the sandbox carries over)."""
        found = self._root / command
        if self._sandbox is not None and not os.path.lexists(found):
            found = self._sandbox.inside(self._root) / command
        return str(found)

    def _expand(self, value: str, where: str, spec: McpServer) -> str:
        """`${VAR}` from our environment; a client's server gets its values as the client sent
        them (the client filled them, and our environment is not the client's to read)."""
        if spec.from_client:
            return value

        def one(match: re.Match[str]) -> str:
            found = self._own.get(match.group(1), self._environ.get(match.group(1)))
            if found is None and match.group(2) is None:
                raise ValueError(f"{where} uses ${{{match.group(1)}}}, which is not set")
            return found if found is not None else match.group(2)

        return VAR.sub(one, value)

    def _add_tools(self, server: str, tools: list[mcp_types.Tool]) -> None:
        taken = {t.name for t in self._tools}
        spec = self._specs[server]
        if spec.tools is not None:
            listed = {t.name for t in tools}
            self.warnings += [
                f"MCP server '{server}' has no tool {name!r} (listed in its `tools`)"
                for name in spec.tools
                if name not in listed
            ]
            tools = [t for t in tools if t.name in spec.tools]
        for tool in tools:
            wanted = f"mcp__{server}__{tool.name}"
            name = _INVALID.sub("_", wanted)[:128]
            problem = _schema_problem(tool.input_schema)
            if not TOOL_NAME_RE.match(name) or name in taken or problem:
                why = problem or ("the name is taken" if name in taken else "invalid name")
                self.warnings.append(
                    f"MCP tool {tool.name!r} of '{server}' skipped: {why} ({name})"
                )
                continue
            if name != wanted:
                self.warnings.append(f"MCP tool {tool.name!r} of '{server}' is offered as {name}")
            taken.add(name)
            schema = {"type": "object", **tool.input_schema}
            description = tool.description or tool.title or f"{tool.name} (MCP server {server})"
            timeout = spec.start_seconds + spec.timeout + TIMEOUT_MARGIN
            self._tools.append(McpTool(name, description, schema, timeout, server, tool.name, self))

    def tools(self) -> list[Tool]:
        """The tools of every server that started, in configuration order."""
        return list(self._tools)

    def pids(self) -> dict[str, int]:
        """Pid (= process group) of every stdio server spawned last, by server name."""
        return {
            n: c.process.pid
            for n, c in self._connections.items()
            if c.process is not None and c.process.pid is not None
        }

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolResult:
        """Call `tool` on `server` by its own name. Never raises except on cancellation."""
        from mcp.shared.exceptions import MCPError

        conn = self._connections.get(server)
        if conn is None or server in self.failures:
            why = self.failures.get(server, "it is not configured")
            return ToolResult(f"MCP server '{server}' is not available: {why}", is_error=True)
        answered = conn.http.count
        try:
            result = await conn.call(tool, arguments)
        except ServerUnavailable as exc:
            _notify(ctx, str(exc).split("\n", 1)[0])
            return ToolResult(str(exc), is_error=True)
        except CallTimeout:
            timeout = conn.spec.timeout
            text = (
                f"{tool} on MCP server '{server}' did not answer within {timeout:g} s; cancelled."
            )
            return ToolResult(text, is_error=True)
        except MCPError as exc:
            why = f"{exc.message} (code {exc.code})"
            if conn.http.count > answered:  # the SDK's words hide the HTTP answer: show it
                why = f"it answered {conn.http.last}"
            return ToolResult(f"MCP server '{server}' rejected the call to {tool}: {why}", True)
        except Exception as exc:
            return ToolResult(
                f"Calling {tool} on MCP server '{server}' failed: {describe(exc)}", True
            )
        converted = self._converter.convert(server, tool, result, arguments)
        note, relisted = conn.take_restart()
        if note:
            _notify(ctx, note.strip("[]"))
            converted = replace(converted, text=f"{note}\n{converted.text}")
        if relisted is not None:
            allowed = conn.spec.tools
            relisted = [t for t in relisted if allowed is None or t.name in allowed]
            offered = [t for t in self._tools if t.server == server]
            converted = replace(converted, announce=tool_change(server, offered, relisted))
        return converted

    async def aclose(self) -> None:
        """Close every server; bounded, survives cancellation, and leaves no process behind."""
        closing = asyncio.gather(*(c.close() for c in self._connections.values()))
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            # Cancelled while closing: finish closing anyway (bounded), then pass it on.
            await asyncio.wait({closing}, timeout=30)
            raise
        finally:
            for conn in self._connections.values():
                conn.kill_now()


PRELOAD = (
    "anyio._backends._asyncio",
    "jsonschema",
    "mcp",
    "mcp.client.streamable_http",
    "mcp.shared.exceptions",
    "mcp.shared.message",
    "mcp_types",
)
"""The MCP client, its types and exceptions, both transports, the schema checker and the
event-loop backend anyio loads at its first use."""


def preload() -> None:
    """Import what starting and calling servers imports (the MCP client, its types and both
    transports, the schema checker), so a spare worker (`workers/spare.py`) has paid for it before
    its run is asked for."""
    for name in PRELOAD:
        importlib.import_module(name)


def _schema_problem(schema: dict[str, Any]) -> str | None:
    import jsonschema

    if schema.get("type", "object") != "object":
        return f"its input schema has type {schema.get('type')!r}, not 'object'"
    try:
        jsonschema.Draft202012Validator.check_schema({"type": "object", **schema})
    except jsonschema.SchemaError as exc:
        return f"invalid input schema: {exc.message}"
    return None


def _notify(ctx: ToolContext | None, message: str) -> None:
    if ctx is not None:
        ctx.emit(Notice(level="warning", message=message))
