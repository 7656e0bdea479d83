"""The ACP agent: `initialize`, sessions, prompts, cancel — each handed to its card session.

It advertises only what it does: `session/load` (resume an interrupted run), embedded context
(a mentioned card file arrives as a resource), no images or audio (a run's input is its card,
not the prompt's pictures) and no MCP servers of the client's. Those would join the run's tool
pool without the checks the project's own servers get (settings, the review of `.mcp.json`
changes, the sandbox), so they are named to the user and left out. The client's file system and
terminal are not used: the run reads and writes through its own path guard and sandbox, so a
missing `clientCapabilities` (all false) changes nothing.
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
from cardrunner.acp.session import CardSession

FindRoot = Callable[[Path], Path]


def _left_out(servers: list[Any] | None) -> list[str]:
    names = [str(getattr(s, "name", "?")) for s in servers or []]
    if not names:
        return []
    return [
        f"MCP servers from the client are not added to the run ({', '.join(names)}): "
        "configure them in cardrunner.toml or .mcp.json, where they are reviewed (docs/acp.md)."
    ]


class CardAgent:
    """Every session of one client connection."""

    def __init__(self, find_root: FindRoot) -> None:
        self._find_root = find_root
        self._client: Client | None = None
        self._sessions: dict[str, CardSession] = {}
        self._announcing: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    def _connected(self) -> Client:
        if self._client is None:
            raise RequestError.internal_error({"details": "no client connection"})
        return self._client

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
            ),
            agent_info=Implementation(name="cardrunner", title="cardrunner", version=__version__),
            auth_methods=[],
        )

    def _session(self, session_id: str, cwd: str, mcp_servers: list[Any] | None) -> CardSession:
        root = self._find_root(Path(cwd))
        session = CardSession(self._connected(), session_id, root, remarks=_left_out(mcp_servers))
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
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = secrets.token_hex(12)
        self._session(session_id, cwd, mcp_servers)
        self._announce(session_id)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
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
