"""Where a card's state is written: the file on disk, or the editor's buffer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal, Protocol

from cardrunner.card.card import write_card


class CardStore(Protocol):
    """Where card state is written: the file on disk, or the editor's buffer (LSP applyEdit)."""

    async def update(
        self,
        path: Path,
        *,
        state: str,
        reason: str | Literal[False] | None = None,
        run: dict[str, Any] | None = None,
    ) -> None: ...


class DiskCardStore:
    """Writes the card file atomically, off the event loop."""

    async def update(
        self,
        path: Path,
        *,
        state: str,
        reason: str | Literal[False] | None = None,
        run: dict[str, Any] | None = None,
    ) -> None:
        await asyncio.to_thread(write_card, path, state=state, reason=reason, run=run)
