"""The language server's features, wired together: loaded once `initialize` is answered.

`CardApp` builds the features (settings, card index, diagnostics store, the run manager, card
diagnostics, reviews, progress, status, the runs, watcher, views, commands) in an order in which
each is handed what it needs when it is built, and carries the server's life cycle
(start-up, settings changes, shutdown) and the documents' events to them; it computes nothing of
its own. Every run event goes to the runs feature (features/runs.py), which shows it; no
feature calls back into the app. `CardServer` (server.py) answers `initialize` without any of
this — pydantic, yaml, watchfiles, the run modules — and builds the `CardApp` right after the
answer is sent (or at the first request that needs it, should a client not wait for the answer),
so the editor's start waits for pygls alone. Nothing here blocks the event loop, and nothing is
written to stdout (the JSON-RPC channel). Runs execute in worker processes (`workers/handle.py`):
`anthropic` and `mcp` never load here.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cardrunner import __version__
from cardrunner.lsp.core.cardstore import EditorCardStore
from cardrunner.lsp.core.client import Client, spawn, uri_to_path
from cardrunner.lsp.core.config import SettingsFeature, served_root
from cardrunner.lsp.core.diagnostics import DiagnosticsStore
from cardrunner.lsp.core.index import CardIndex
from cardrunner.lsp.core.watcher import CardWatcher
from cardrunner.lsp.features.carddiagnostics import CardDiagnostics
from cardrunner.lsp.features.commands import Commands
from cardrunner.lsp.features.progress import RunProgress
from cardrunner.lsp.features.review import ReviewHub
from cardrunner.lsp.features.runs import RunDisplays, RunsUI
from cardrunner.lsp.features.status import RunStatus
from cardrunner.lsp.features.trust import TrustPrompt
from cardrunner.lsp.features.views import Views
from cardrunner.run.liveness import interrupted_runs, sweep
from cardrunner.workers.manager import RunManager

log = logging.getLogger("cardrunner.lsp")

SHUTDOWN_SECONDS = 10.0
"""At `shutdown` the editor waits for our answer: runs get this long to write their results."""
CATCH_UP_SECONDS = 30.0
"""Start-up waits this long at most for the watcher's first catch-up pass before it says it is
serving (the pass itself takes ~0.1 s on 10,000 cards; the cap is for a machine that stalls)."""


class CardApp:
    """The server's features, and what they share: the workspace root and the editor."""

    def __init__(
        self, server: LanguageServer, client: Client, root: Path, init_options: Any
    ) -> None:
        """`root` and `init_options` are what `initialize` said; the settings they give are
        read here, at once, since a run may be asked for before `initialized` is handled.
        A monorepo package's folder is served as its root (`served_root`)."""
        self._ls = server
        self.root, self._root_note = served_root(root)
        self.client = client
        self.settings = SettingsFeature(self.client, lambda: self.root, init_options)
        self.store = DiagnosticsStore(self._publish)
        self.index = CardIndex(server, lambda: self.root, lambda: self.settings.view.cards)
        self.card_store = EditorCardStore(self.client, self.index)
        self.manager = RunManager(
            self.root, self.settings.settings, self.card_store, trust=TrustPrompt(self.client)
        )
        orphans: dict[Path, str] = {}  # filled at start-up (`interrupted_runs`)
        self.diagnostics = CardDiagnostics(  # it follows the index: whoever reads a card
            self.index,
            self.store,
            self.manager.get,
            self.manager.is_live,
            lambda: self.root,
            orphans.get,
        )
        self.reviews = ReviewHub(
            self.client,
            lambda: self.root,
            self.index.uri,
            self.store,
            self.diagnostics.refresh,
            self.index.open_text,
        )
        self.run_progress = RunProgress(server, self.client, self.manager.cancel)
        self.status = RunStatus(
            self.client, self.manager.views, self.index.uri, self.settings.sandbox_mode
        )
        self.runs = RunsUI(
            self.root,
            self.client,
            self.index,
            self.settings,
            self.card_store,
            self.reviews,
            self.manager,
            RunDisplays(self.diagnostics, self.run_progress, self.status),
            orphans,
        )
        self.watcher = CardWatcher(self.index.cards_dir, self.index.is_card, self.cards_changed)
        self.views = Views(self.root, self.index, self.runs, self.reviews)
        self.commands = Commands(self.client, self.index, self.settings, self.runs, self.reviews)
        self._stopping: asyncio.Future[None] | None = None
        self.started = asyncio.Event()
        """Set once start-up work is over (the "serving" line): everything it reads is in."""
        self._freezing = False  # the first scan runs: freeze what each batch brings

    # --- life cycle -------------------------------------------------------------------------

    def initialized(self) -> None:
        """The client said `initialized`: start-up work goes on in the background."""
        spawn(self.startup())

    async def startup(self) -> None:
        """After `initialized`: settings, every card's diagnostics, the watcher, and the
        processes a previous server that died left behind."""
        if self._root_note:
            log.info("%s", self._root_note)
            self.client.show_message(self._root_note, types.MessageType.Info)
        swept = await asyncio.to_thread(sweep, self.root)
        if swept:
            log.warning("stopped %d process group(s) left by a server that died", len(swept))
        await self.settings.reload()
        # the past runs' costs come from one `git log` over the whole history: seconds in a
        # big repository, so it reads beside the scan instead of before the first card
        history = asyncio.ensure_future(self.runs.forecasts.load())
        orphans = await asyncio.to_thread(interrupted_runs, self.root)
        self.runs.orphans.update(
            {(self.root / card).resolve(): run for card, run in orphans.items()}
        )
        # What start-up made stays, and so do the cards the scan brings: out of the collector's
        # way. Frozen before the scan and after each of its batches, a full collection never
        # walks the board (55 ms at 10,000 cards, in the middle of requests); a card's entry
        # has no cycles, so one replaced later is still freed at once.
        gc.collect()
        gc.freeze()
        self.watcher.start()  # before the scan: what changes while it reads has an event
        self._freezing = True
        try:
            await self.rescan()
        finally:
            self._freezing = False
        if await history:
            self.client.refresh_code_lenses()  # the forecasts now know the past runs
        await self.watcher.caught_up(CATCH_UP_SECONDS)
        gc.freeze()
        log.info(
            "cardrunner %s serving %s (cards in %s/); %s",
            __version__,
            self.root,
            self.settings.view.cards,
            await asyncio.to_thread(self.settings.sandbox_mode),
        )
        self.started.set()
        self.status.send()

    def settings_changed(self) -> None:
        """The client's settings changed: read them again, in the background."""
        spawn(self.reload_settings())

    async def reload_settings(self) -> None:
        before = self.settings.view.cards
        await self.settings.reload()
        if self.settings.view.cards != before:
            self.watcher.start()
            await self.rescan()

    async def stop_all(self, why: str, seconds: float = SHUTDOWN_SECONDS) -> None:
        """The editor is closing (`why`): stop watching and stop every run — it ends `Failed`
        / `interrupted` (resumable), with its result in the log and the card on disk. Called
        again (Neovim closes our input right after `shutdown`), it waits for the same stop."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(why, seconds))
        await asyncio.shield(self._stopping)

    async def _stop(self, why: str, seconds: float) -> None:
        self.card_store.disk_only = True
        await self.watcher.aclose()
        await self.manager.aclose(seconds, interrupted=why)
        await self.run_progress.aclose()

    async def rescan(self) -> None:
        """Read every card (at start, and when the cards folder moves); cards that are gone
        (or no longer cards) lose their views. Diagnostics follow batch by batch."""
        await self.index.scan(self._cards_loaded)
        self.client.refresh_code_lenses()

    def _cards_loaded(self, paths: list[Path]) -> None:
        """A batch of cards was installed (their diagnostics followed, card by card)."""
        if self._freezing:
            gc.freeze()

    async def cards_changed(self, changed: set[Path], deleted: set[Path]) -> None:
        """From the watcher: re-read changed cards (unless open in the editor; parsed only
        when their text changed), drop deleted ones. Nothing named: a watch (re)started, so
        catch up with the folder — comparing files, not reading them all again."""
        if not changed and not deleted:
            if await self.index.sync(self._cards_loaded):
                self.client.refresh_code_lenses()
            return
        touched = await self.index.refresh(sorted(changed), self._cards_loaded)
        for path in deleted:
            if self.index.open_document(path) is None and self.index.get(path) is not None:
                self.index.remove(path)
                touched.append(path)
        if touched:
            self.client.refresh_code_lenses()

    # --- documents --------------------------------------------------------------------------

    def document_changed(self, uri: str) -> None:
        """A buffer was opened or edited: an open card is read from the buffer, not the disk."""
        path = self.index.remember_uri(uri)
        if path is not None and self.index.is_card(path):
            doc = self.index.open_document(path)
            if doc is not None:
                self.index.update(path, doc[1])
                self.diagnostics.refresh(path)
        self.client.forget_finished_requests()

    def document_opened(self, uri: str) -> None:
        self.index.forget_resolved(uri)  # opened anew: resolved anew
        self.document_changed(uri)
        path = uri_to_path(uri)
        if path is not None and self.index.is_card(path):
            self.store.touch(
                self.index.uri(path)
            )  # an opened card always gets its (maybe empty) list

    def document_closed(self, uri: str) -> None:
        """A closed card is read from the disk again (the buffer may have differed)."""
        path = uri_to_path(uri)
        if path is not None and self.index.is_card(path):
            spawn(self.diagnostics.read(path))

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self._ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )


__all__ = ["CardApp"]
