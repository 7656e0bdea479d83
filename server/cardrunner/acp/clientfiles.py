"""The client's file system, where it offers `fs.readTextFile`: the run sees unsaved buffers.

Only reads go through the client, and only the text of a file the run's path guard already
allowed (tools/files.py asks after `PathGuard.resolve_read`, with the resolved absolute path):
the client supplies bytes, it never decides what may be read. A client that fails or is slow
to answer is not waited on past `TIMEOUT`; the run then reads the disk, as it does for a client
that offers nothing. Writes stay cardrunner's own (atomic, behind the conflict guard): the review
and the commit are of the bytes on disk, which a client's `writeTextFile` into an editor buffer
could not promise. The client's terminal is not used either: builds, tests and the app run in
cardrunner's sandbox, where the runner's checks can trust them.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from acp import Client
from acp.schema import ClientCapabilities

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
