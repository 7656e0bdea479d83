"""Where a card's state is written: the file on disk, or the editor's buffer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from cardrunner.card.card import write_card
from cardrunner.card.record import CardUpdate


class CardStore(Protocol):
    """Where card state is written: the file on disk, or the editor's buffer (LSP applyEdit)."""

    async def update(self, path: Path, change: CardUpdate) -> None: ...


class DiskCardStore:
    """Writes the card file atomically, off the event loop."""

    async def update(self, path: Path, change: CardUpdate) -> None:
        await asyncio.to_thread(write_card, path, change)
