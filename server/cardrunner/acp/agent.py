"""The ACP agent: `initialize`, sessions, prompts, cancel — each handed to its card session.

It advertises only what it does: `session/load` (resume an interrupted run), embedded context
(a mentioned card file arrives as a resource), no images or audio (a run's input is its card,
not the prompt's pictures), and MCP servers of the client's over stdio and Streamable HTTP
(`mcpCapabilities.http`) but not SSE: they join each run's tool pool beside the project's, in
the same sandbox and gate (acp/clientside.py). Of the client's own capabilities it uses
`fs.readTextFile`, so a run sees unsaved buffers (acp/clientside.py); not `fs.writeTextFile`
nor the terminal, since the review, the commit and the runner's checks stand on cardrunner's
own writes and sandbox. A missing `clientCapabilities` (all false) changes nothing else.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.helpers import update_available_commands
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from cardrunner import __version__
from cardrunner.acp.cards import COMMANDS, Block
from cardrunner.acp.clientside import ClientFiles, ClientServer, client_servers, reads_files
from cardrunner.acp.session import CardSession

FindRoot = Callable[[Path], Path]


class CardAgent:
    """Every session of one client connection."""

    def __init__(self, find_root: FindRoot) -> None:
        self._find_root = find_root
        self._client: Client | None = None
        self._sessions: dict[str, CardSession] = {}
        self._announcing: set[asyncio.Task[None]] = set()
        self._capabilities: ClientCapabilities | None = None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    def _connected(self) -> Client:
        if self._client is None:
            raise RequestError.internal_error({"details": "no client connection"})
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="cardrunner", title="cardrunner", version=__version__),
            auth_methods=[],
        )

    def _session(
        self, session_id: str, cwd: str, mcp_servers: list[ClientServer] | None
    ) -> CardSession:
        root = self._find_root(Path(cwd))
        client = self._connected()
        files = ClientFiles(client, session_id) if reads_files(self._capabilities) else None
        servers = client_servers(mcp_servers)
        session = CardSession(client, session_id, root, servers, files)
        self._sessions[session_id] = session
        return session

    def _announce(self, session_id: str) -> None:
        """The commands, sent once the client has the session's id (after this answer)."""
        client = self._connected()
        task = asyncio.create_task(
            client.session_update(session_id, update_available_commands(COMMANDS))
        )
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def new_session(
        self, cwd: str, mcp_servers: list[ClientServer] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = secrets.token_hex(12)
        self._session(session_id, cwd, mcp_servers)
        self._announce(session_id)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[ClientServer] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        session = self._session(session_id, cwd, mcp_servers)
        if not await session.load():
            del self._sessions[session_id]
            raise RequestError.invalid_params({"sessionId": session_id, "details": "unknown"})
        self._announce(session_id)
        return LoadSessionResponse()

    async def prompt(self, prompt: list[Block], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "details": "unknown"})
        return PromptResponse(stop_reason=await session.prompt(prompt))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def shutdown(self, why: str) -> None:
        """The client went away: interrupt every run (resumable) and wait until each ended."""
        for session in self._sessions.values():
            session.cancel(why)
        await asyncio.gather(*(s.closed() for s in self._sessions.values()))
