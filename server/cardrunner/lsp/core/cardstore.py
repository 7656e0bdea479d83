"""Card state in the editor and on disk, and never only in one of them without saying so.

The disk is the record that outlives the editor: a state that lives only in an unsaved buffer
is lost with it (the editor killed mid-run left `state: New` on disk, and the next session
could not tell the card had run). But a file written behind a buffer with unsaved edits would
fight the user. So `EditorCardStore` decides by what the editor holds:

- the card is not open (or the editor is going away): the file is written, atomically;
- the card is open and **clean** (the buffer reads as the file does, or as the file did before
  this store wrote it and the buffer has not been touched since): the file is written, and the
  editor reloads its clean buffer (VS Code at once, Neovim and Emacs with the reload of
  docs/editors.md), which leaves it unmodified. No edit is ever sent to such a buffer: its file
  has changed under it, and Emacs then asks "changed on disk; really edit the buffer?" (a
  refused edit in batch and in Eglot's and lsp-mode's request handlers), while Neovim applies
  it but leaves the buffer modified, and `:w` then warns that the file changed since it was
  read. When the buffer has not followed within `RELOAD_WAIT`, the user is told once to
  reload it; until then it is unmodified, so saving it does not undo the state (Emacs does not
  write an unmodified buffer, Neovim warns before writing over a newer file);
- the card is open with **unsaved edits**: the edit goes only into the buffer (the file is not
  written behind the user's back, so the editor asks nothing when the edit arrives), and a
  warning says the state is in the unsaved buffer until it is saved. If the editor refuses the
  edit (or takes none), the file is written and the warning says that buffer and file now
  differ.

While a clean buffer has not followed its file, the server's views of the card (lenses,
hovers, diagnostics) stay on the buffer's text: the editor places them by the lines it shows.

Which wins: the disk whenever that loses nothing of the user's; the buffer when it holds
unsaved edits, because the user's save will write the state with them.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types

from cardrunner.card.backlog import board_of
from cardrunner.card.card import DiskCardStore
from cardrunner.card.record import CardUpdate
from cardrunner.card.writeback import card_edits, update_card_text
from cardrunner.lsp.core.client import Client
from cardrunner.lsp.core.index import CardIndex

log = logging.getLogger("cardrunner.lsp.cardstore")

ECHO_TIMEOUT = 3.0
"""Seconds to wait for the editor's didChange after it applied our edit."""
RELOAD_WAIT = 1.0
"""Seconds a clean buffer gets to follow the file before the user is told to reload it."""


class EditorCardStore:
    """`CardStore` that keeps the card's file and its open buffer in agreement."""

    def __init__(self, client: Client, index: CardIndex) -> None:
        self._client = client
        self._index = index
        self._disk = DiskCardStore()
        self.disk_only = False
        """Set at shutdown: an editor that is closing cannot be trusted to keep an edit."""
        self._behind: dict[Path, str] = {}
        """The text of each clean buffer whose file was written and that has not followed it
        yet: still clean while it reads so, though the disk differs."""

    async def update(self, path: Path, change: CardUpdate) -> None:
        doc = self._index.open_document(path)
        if doc is None or self.disk_only:
            await self._write(path, change)
            return
        uri, text, version = doc
        if text in (await self._on_disk(path), self._behind.get(path)):
            await self._write_behind_clean(path, text, change)
            return
        self._behind.pop(path, None)
        if not self._client.supports_apply_edit:
            await self._write(path, change)
            self._warn(path, "the editor takes no edits, so its buffer and the file differ")
            return
        try:
            new = update_card_text(text, board=board_of(path), **change.text_arguments())
        except ValueError as exc:
            log.warning("cannot update the open card %s (%s); writing the file", path.name, exc)
            await self._write(path, change)
            return
        if new != text and not await self._apply(path, uri, version, text, new, change):
            await self._write(path, change)
            self._warn(path, "the editor refused the edit, so its buffer and the file differ")
            return
        self._warn(path, f"its state ({change.state}) is in the unsaved buffer until you save it")

    async def _write_behind_clean(self, path: Path, text: str, change: CardUpdate) -> None:
        """Write the file of a clean buffer and let the editor reload it; say so once when it
        does not."""
        await self._write(path, change)
        new = await self._on_disk(path)
        if new is None or await self._index.wait_for_text(path, new, RELOAD_WAIT):
            self._behind.pop(path, None)
            return
        if path not in self._behind:
            self._client.show_message(
                f"cardrunner: {path.name} is now {change.state} on disk; its buffer still "
                "shows the file as it was (unmodified): reload it (Emacs: auto-revert-mode, "
                "Neovim: :checktime, see docs/editors.md)",
                types.MessageType.Warning,
            )
        self._behind[path] = text

    async def _write(self, path: Path, change: CardUpdate) -> None:
        await self._disk.update(path, change)
        await self._index.read(path)

    async def _on_disk(self, path: Path) -> str | None:
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError:
            return None
        return data.decode("utf-8", errors="replace")

    def _warn(self, path: Path, what: str) -> None:
        self._client.show_message(
            f"cardrunner: {path.name} has unsaved changes: {what}", types.MessageType.Warning
        )

    async def _apply(
        self, path: Path, uri: str, version: int | None, old: str, new: str, change: CardUpdate
    ) -> bool:
        """Apply `old` → `new` to the open buffer; True once the editor applied it."""
        edit = self._edit(uri, version, old, new)
        try:
            result = await self._client.request(
                types.WORKSPACE_APPLY_EDIT,
                types.ApplyWorkspaceEditParams(edit=edit, label=f"cardrunner: card {change.state}"),
            )
        except Exception as exc:
            log.warning("applyEdit on %s failed (%r)", path.name, exc)
            return False
        if result is None or not result.applied:
            why = getattr(result, "failure_reason", None) or "not applied"
            log.warning("the editor did not apply the edit on %s (%s)", path.name, why)
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
