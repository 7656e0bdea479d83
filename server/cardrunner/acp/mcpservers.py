"""The MCP servers an ACP client passes in `session/new` / `session/load`, as run settings.

They join the run's tool pool exactly as the project's own servers do (`Settings.mcp`, started
by the run's `McpHub`): a stdio server runs in the run's sandbox with the same minimal
environment, its tools are offered as `mcp__<server>__<tool>` and go through the same gate, and
none of them widens the path guard or the sandbox. What differs is only where they came from
(`CLIENT_SOURCE`): the user chose them in their own editor, as they would in their own
`config.toml`, so they need no trust question (that question is about what a stranger's
repository asks for); their values are the client's, taken literally. A Streamable HTTP server
(`http`) is reached from cardrunner's process as a configured `url` server is; SSE is not
spoken (`mcpCapabilities.sse` is false), so an SSE server is named and left out, as is one
whose name the project's own configuration already uses (the project's stays).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from cardrunner.config.mcpserver import CLIENT_SOURCE, McpServer
from cardrunner.config.settings import Settings

ClientServer = HttpMcpServer | SseMcpServer | McpServerStdio


@dataclass(frozen=True)
class ClientServers:
    """The client's servers as run settings, and what was left out (said to the user)."""

    servers: dict[str, McpServer] = field(default_factory=dict)
    remarks: list[str] = field(default_factory=list)

    def into(self, settings: Settings) -> tuple[Settings, list[str]]:
        """`settings` with these servers beside the project's; a name the project uses stays
        the project's."""
        taken = [n for n in self.servers if n in settings.mcp]
        added = {n: s for n, s in self.servers.items() if n not in settings.mcp}
        remarks = [
            f"MCP server {n!r} from the client is left out: the project configures one of that name"
            for n in taken
        ]
        merged = settings.model_copy(update={"mcp": {**settings.mcp, **added}})
        return merged, remarks


def _settings(server: ClientServer) -> McpServer:
    if isinstance(server, HttpMcpServer):
        headers = {h.name: h.value for h in server.headers}
        return McpServer(url=server.url, headers=headers, source=CLIENT_SOURCE)
    env = {e.name: e.value for e in server.env}
    return McpServer(command=server.command, args=list(server.args), env=env, source=CLIENT_SOURCE)


def client_servers(passed: Sequence[ClientServer] | None) -> ClientServers:
    """What the client passed, as settings; SSE servers and repeated names left out."""
    servers: dict[str, McpServer] = {}
    remarks: list[str] = []
    for server in passed or []:
        if isinstance(server, SseMcpServer):
            remarks.append(
                f"MCP server {server.name!r} from the client is left out: cardrunner speaks "
                "stdio and Streamable HTTP to MCP servers, not SSE"
            )
        elif server.name in servers:
            remarks.append(f"MCP server {server.name!r} from the client is passed twice")
        else:
            servers[server.name] = _settings(server)
    return ClientServers(servers, remarks)
