"""What an ACP client lends a run: the MCP servers it passes, and reads of its unsaved buffers.

The MCP servers a client passes in `session/new` / `session/load` become run settings. They join
the run's tool pool exactly as the project's own servers do (`Settings.mcp`, started by the
run's `McpHub`): a stdio server runs in the run's sandbox with the same minimal environment, its
tools are offered as `mcp__<server>__<tool>` and go through the same gate, and none of them
widens the path guard or the sandbox. What differs is only where they came from
(`CLIENT_SOURCE`): the user chose them in their own editor, as they would in their own
`config.toml`, so they need no trust question (that question is about what a stranger's
repository asks for); their values are the client's, taken literally. A Streamable HTTP server
(`http`) is reached from cardrunner's process as a configured `url` server is; SSE is not
spoken (`mcpCapabilities.sse` is false), so an SSE server is named and left out, as is one
whose name the project's own configuration already uses (the project's stays).

Where the client offers `fs.readTextFile`, the run reads through the client's file system and
so sees unsaved buffers. Only reads go through the client, and only the text of a file the run's
path guard already allowed (tools/files.py asks after `PathGuard.resolve_read`, with the
resolved absolute path): the client supplies bytes, it never decides what may be read. A client
that fails or is slow to answer is not waited on past `TIMEOUT`; the run then reads the disk, as
it does for a client that offers nothing. Writes stay cardrunner's own (atomic, behind the
conflict guard): the review and the commit are of the bytes on disk, which a client's
`writeTextFile` into an editor buffer could not promise. The client's terminal is not used
either: builds, tests and the app run in cardrunner's sandbox, where the runner's checks can
trust them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from acp import Client
from acp.schema import ClientCapabilities, HttpMcpServer, McpServerStdio, SseMcpServer

from cardrunner.config.settings import Settings
from cardrunner.config.settingsfiles import CLIENT_SOURCE, McpServer

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


log = logging.getLogger(__name__)

TIMEOUT = 10.0
"""Seconds a client has to answer one read before the run reads the disk instead."""


def reads_files(capabilities: ClientCapabilities | None) -> bool:
    """The client offers `fs/read_text_file` (a missing `clientCapabilities` offers nothing)."""
    return bool(capabilities and capabilities.fs and capabilities.fs.read_text_file)


class ClientFiles:
    """A file's text as the client's editor has it, for one session."""

    def __init__(self, client: Client, session_id: str) -> None:
        self._client = client
        self._session_id = session_id

    async def __call__(self, path: Path) -> str | None:
        try:
            async with asyncio.timeout(TIMEOUT):
                answer = await self._client.read_text_file(
                    session_id=self._session_id, path=str(path)
                )
        except Exception as exc:  # the disk's text is shown instead; the run goes on
            log.warning("the client did not read %s: %s", path, exc)
            return None
        return answer.content
