"""Card state written through the editor when the card is open there, on disk otherwise.

A card open in the editor belongs to the buffer: writing the file behind the editor's back
would fight unsaved edits. So `EditorCardStore` computes the new text from the buffer with
`update_card_text`, sends the minimal line edit with `workspace/applyEdit` (undo works), and
waits until the editor echoes it back. An edit not applied, an error or a timeout falls back
to writing the file on disk, and says so in the log.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types

from cardrunner.card.record import CardUpdate
from cardrunner.card.writeback import card_edits, update_card_text
from cardrunner.lsp.core.client import Client
from cardrunner.lsp.core.index import CardIndex
from cardrunner.run.store import DiskCardStore

log = logging.getLogger("cardrunner.lsp.cardstore")

ECHO_TIMEOUT = 3.0
"""Seconds to wait for the editor's didChange after it applied our edit."""


class EditorCardStore:
    """`CardStore` that prefers the editor buffer (applyEdit) and falls back to the disk."""

    def __init__(self, client: Client, index: CardIndex) -> None:
        self._client = client
        self._index = index
        self._disk = DiskCardStore()
        self.disk_only = False
        """Set at shutdown: an editor that is closing cannot be trusted to keep an edit."""

    async def update(self, path: Path, change: CardUpdate) -> None:
        if await self._through_editor(path, change):
            return
        await self._disk.update(path, change)
        await self._index.read(path)

    async def _through_editor(self, path: Path, change: CardUpdate) -> bool:
        doc = self._index.open_document(path)
        if doc is None or self.disk_only or not self._client.supports_apply_edit:
            return False
        uri, old, version = doc
        try:
            new = update_card_text(old, **change.text_arguments())
        except ValueError as exc:
            log.warning("cannot update the open card %s (%s); writing the file", path.name, exc)
            return False
        if new == old:
            return True
        edit = self._edit(uri, version, old, new)
        try:
            result = await self._client.request(
                types.WORKSPACE_APPLY_EDIT,
                types.ApplyWorkspaceEditParams(edit=edit, label=f"cardrunner: card {change.state}"),
            )
        except Exception as exc:
            log.warning("applyEdit on %s failed (%r); writing the file instead", path.name, exc)
            return False
        if result is None or not result.applied:
            why = getattr(result, "failure_reason", None) or "not applied"
            log.warning(
                "the editor did not apply the edit on %s (%s); writing the file", path.name, why
            )
            return False
        if not await self._index.wait_for_text(path, new, ECHO_TIMEOUT):
            log.info("the editor applied the edit on %s but did not echo it back", path.name)
        return True

    def _edit(self, uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
        edits = [
            types.TextEdit(
                range=types.Range(types.Position(sl, sc), types.Position(el, ec)),
                new_text=text,
            )
            for sl, sc, el, ec, text in card_edits(
                old, new, position_encoding=self._client.position_encoding
            )
        ]
        if self._client.supports_document_changes:
            doc = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=doc, edits=list(edits))]
            )
        return types.WorkspaceEdit(changes={uri: edits})
