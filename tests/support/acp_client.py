"""`cardrunner acp` driven by the ACP Python SDK's client side, as an editor's agent panel does.

`AcpClient` is a real `acp.Client`: it records every session update as the SDK parsed it (so
an update the schema rejects is missing here as it would be in an editor), answers each
permission request from a list and notes what it had been shown by then, and answers
`fs/read_text_file` from its `buffers` (an editor's unsaved text), the disk's text otherwise.
`agent()` spawns `python -m cardrunner acp` in the repository with the SDK's own
`spawn_agent_process`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    ClientCapabilities,
    FileEditToolCallContent,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)


@dataclass
class Asked:
    """One permission request and how many updates the client had received before it."""

    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    seen: int


@dataclass
class AcpClient:
    """Records updates; answers permission requests with `answers` (option ids), in order;
    with none left it never answers (the review stays open, as when the user walks away)."""

    answers: list[str] = field(default_factory=list)
    updates: list[Any] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)
    """Absolute path → the text an editor holds for it, not saved."""
    read: list[str] = field(default_factory=list)
    """Every path the agent asked the client to read."""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(Asked(tool_call, options, len(self.updates)))
        self._changed.set()
        if not self.answers:
            await asyncio.Future()  # until the connection goes
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answers.pop(0))
        )

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> ReadTextFileResponse:
        self.read.append(path)
        text = self.buffers.get(path)
        if text is None:
            text = await asyncio.to_thread(Path(path).read_text)
        return ReadTextFileResponse(content=text)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self._changed.set()

    def on_connect(self, conn: Any) -> None:
        pass

    async def wait_for(self, predicate: Callable[[], bool], what: str, seconds: float) -> None:
        """Until `predicate` holds: looked at on each update or permission request, and every
        tenth of a second for what no update announces (a process appearing)."""
        try:
            async with asyncio.timeout(seconds):
                while not predicate():
                    self._changed.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.1):
                            await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    def plans(self) -> list[list[tuple[str, str]]]:
        return [
            [(e.content, e.status) for e in u.entries]
            for u in self.updates
            if isinstance(u, AgentPlanUpdate)
        ]

    def calls(self) -> list[ToolCallStart | ToolCallProgress]:
        return [u for u in self.updates if isinstance(u, ToolCallStart | ToolCallProgress)]

    def started(self, title_prefix: str) -> list[ToolCallStart]:
        return [
            u
            for u in self.updates
            if isinstance(u, ToolCallStart) and u.title.startswith(title_prefix)
        ]

    def diffs(self) -> list[FileEditToolCallContent]:
        return [
            c
            for u in self.calls()
            for c in u.content or []
            if isinstance(c, FileEditToolCallContent)
        ]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if u.session_update == kind and getattr(u.content, "text", None)
        )


def agent_env() -> dict[str, str]:
    """The test's environment without any API key: every run plays its transcript."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


@contextlib.asynccontextmanager
async def agent(
    root: Path, client: AcpClient, capabilities: ClientCapabilities | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`cardrunner acp` in `root`, initialized with `capabilities` (by default none: all
    false); its stderr goes to `<root>.acp-stderr.log` (a pipe nobody reads would fill and
    block it)."""
    log = root.parent / f"{root.name}.acp-stderr.log"
    with log.open("ab") as stderr:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "cardrunner",
            "acp",
            cwd=root,
            env=agent_env(),
            transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 30.0},
        ) as (conn, process):
            async with asyncio.timeout(60):
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
                )
            yield conn, process


def prompt(text: str) -> list[Any]:
    return [text_block(text)]
