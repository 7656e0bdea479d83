"""The language server's features, wired together: loaded once `initialize` is answered.

`CardApp` owns the features (settings, card index, diagnostics store, runs, progress, reviews,
status, watcher, views, commands) and is the one `RunListener`: every run event fans out from
here to the views that show it. `CardServer` (server.py) answers `initialize` without any of
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
from typing import Any, assert_never

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cardrunner import __version__
from cardrunner.agent import events as ev
from cardrunner.card.record import KEEP, CardUpdate
from cardrunner.lsp.core.cardstore import EditorCardStore
from cardrunner.lsp.core.client import Client
from cardrunner.lsp.core.config import SettingsFeature
from cardrunner.lsp.core.diagnostics import DiagnosticsStore
from cardrunner.lsp.core.index import CardIndex
from cardrunner.lsp.core.uris import uri_to_path
from cardrunner.lsp.core.watcher import CardWatcher
from cardrunner.lsp.features import commands, trust
from cardrunner.lsp.features.carddiagnostics import CardDiagnostics
from cardrunner.lsp.features.codelens import CardSituation
from cardrunner.lsp.features.progress import RunProgress
from cardrunner.lsp.features.review import ReviewHub
from cardrunner.lsp.features.status import RunStatus
from cardrunner.lsp.views import Views
from cardrunner.processes.sandbox import describe
from cardrunner.run.grant import ResumeGrant
from cardrunner.run.liveness import interrupted_runs
from cardrunner.run.sweep import sweep
from cardrunner.run.view import RunView
from cardrunner.workers.manager import RunManager

log = logging.getLogger("cardrunner.lsp")

COALESCE_SECONDS = 0.1  # a run's progress, diagnostics and status change at most this often
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
        read here, at once, since a run may be asked for before `initialized` is handled."""
        self._ls = server
        self.root = root
        self.client = client
        self.settings = SettingsFeature(self.client, lambda: self.root)
        self.settings.init_options = init_options
        self.index = CardIndex(
            server,
            lambda: self.root,
            lambda: self.settings.settings.cards,
            lambda path: self.diagnostics.refresh(path),  # whoever read it, they follow
        )
        self.store = DiagnosticsStore(self._publish)
        self.reviews = ReviewHub(
            self.client, self.card_changed, lambda: self.root, self.index.uri, self.open_text
        )
        self.card_store = EditorCardStore(self.client, self.index)
        self.runs = RunManager(
            self.root,
            lambda: self.settings.settings,
            self,
            self.reviews.approver,
            self.card_store,
            trust=trust.TrustPrompt(self.client),
        )
        self.orphans: dict[Path, str] = {}
        """Cards whose newest run log has no result and no live process → that run's id."""
        self.diagnostics = CardDiagnostics(
            self.index,
            self.store,
            self.runs.get,
            self.runs.is_live,
            lambda: self.root,
            self.orphans.get,
        )
        self.run_progress = RunProgress(server, self.client, self.runs.cancel)
        self.status = RunStatus(self.client, self.runs.views, self.index.uri, self.sandbox_mode)
        self.watcher = CardWatcher(self.index.cards_dir, self.index.is_card, self.cards_changed)
        self.views = Views(self)
        self.commands = commands.Commands(self)
        self._stopping: asyncio.Future[None] | None = None
        self._following: dict[Path, asyncio.TimerHandle] = {}  # runs changed since shown
        self._lenses_due: set[Path] = set()  # … whose lenses changed too
        self._freezing = False  # the first scan runs: freeze what each batch brings
        self.settings.load_initial()

    # --- life cycle -------------------------------------------------------------------------

    def initialized(self) -> None:
        """The client said `initialized`: start-up work goes on in the background."""
        commands.spawn(self.startup())

    async def startup(self) -> None:
        """After `initialized`: settings, every card's diagnostics, the watcher, and the
        processes a previous server that died left behind."""
        swept = await asyncio.to_thread(sweep, self.root)
        if swept:
            log.warning("stopped %d process group(s) left by a server that died", len(swept))
        await self.settings.reload()
        orphans = await asyncio.to_thread(interrupted_runs, self.root)
        self.orphans.update({(self.root / card).resolve(): run for card, run in orphans.items()})
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
        await self.watcher.caught_up(CATCH_UP_SECONDS)
        gc.freeze()
        log.info(
            "cardrunner %s serving %s (cards in %s/); %s",
            __version__,
            self.root,
            self.settings.settings.cards,
            await asyncio.to_thread(self.sandbox_mode),
        )
        self.status.send()

    def sandbox_mode(self) -> str:
        """The sandbox mode in force (probing bubblewrap once per process, then cached)."""
        box = self.settings.settings.sandbox
        return describe(box.mode, box.network)

    def settings_changed(self) -> None:
        """The client's settings changed: read them again, in the background."""
        commands.spawn(self.reload_settings())

    async def reload_settings(self) -> None:
        before = self.settings.settings.cards
        await self.settings.reload()
        if self.settings.settings.cards != before:
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
        await self.runs.aclose(seconds, interrupted=why)
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
            commands.spawn(self._read_card(path))

    # --- runs -------------------------------------------------------------------------------

    def start_run(self, path: Path, resume: ResumeGrant | None) -> dict[str, Any]:
        busy = [v for v in self.runs.views() if v.live and v.touched and v.card_path != path]
        view = self.runs.start(path, resume)
        self.orphans.pop(path, None)  # its log gets a result now (a resume continues it)
        for other in busy:
            self.client.show_message(
                f"cardrunner: {other.title} is still running and has changed "
                f"{', '.join(sorted(other.touched)[:8])}; if {view.title} changes them too, "
                "review both diffs with care (their commits may not apply cleanly together).",
                types.MessageType.Warning,
            )
        entry = self.index.get(path)
        if entry is not None and entry.card is not None:
            view.title = entry.card.title
        elif entry is None:  # run from a command before the watcher or the editor showed it
            commands.spawn(self._read_card(path))
        token = self.run_progress.start(view)
        self.card_changed(path)
        self.status.changed()
        return {"uri": self.index.uri(path), "runId": view.run_id, "token": token}

    async def _read_card(self, path: Path) -> None:
        await self.index.read(path)
        self.diagnostics.refresh(path)

    def default_grant(self, path: Path) -> ResumeGrant:
        """What a resume adds when the user does not say: a quarter more of the budget that
        ran out (rounds or cost); nothing for a run that stopped for another reason."""
        limits = self.settings.settings.limits
        view, entry = self.runs.get(path), self.index.get(path)
        reason = view.reason if view else None
        if reason is None and entry is not None and entry.card is not None:
            last = entry.card.last_run
            reason = (last.reason if last else None) or entry.card.reason
        rounds = max(10, limits.max_rounds // 4) if reason == "max_rounds" else 0
        cost = max(0.5, (limits.max_cost_usd or 0.0) / 4) if reason == "max_cost" else 0.0
        return ResumeGrant(rounds, cost)

    def last_log(self, path: Path) -> Path | None:
        view = self.runs.get(path)
        if view is not None and view.log_path is not None:
            return view.log_path
        entry = self.index.get(path)
        last = entry.card.last_run if entry and entry.card else None
        return (self.root / last.log).resolve() if last and last.log else None

    def situation(self, path: Path) -> CardSituation:
        return CardSituation(
            uri=self.index.uri(path),
            entry=self.index.get(path),
            view=self.runs.get(path),
            live=self.runs.is_live(path),
            reviewing=self.reviews.pending(path) is not None,
            orphan_run=self.orphans.get(path),
        )

    def card_changed(self, path: Path) -> None:
        """A card's run situation changed: its diagnostics, lenses and review marks follow."""
        self.diagnostics.refresh(path)
        self.views.review_marks(path)
        self.client.refresh_code_lenses()

    def open_text(self, path: Path) -> str | None:
        """The open buffer of any file (the review's `.diff` too), None when it is not open."""
        for uri, doc in list(self._ls.workspace.text_documents.items()):
            if uri_to_path(uri) == path:
                return str(doc.source)
        return None

    async def set_card_state(self, path: Path, state: str) -> None:
        """Move a card by hand: its front matter changes (in the buffer when it is open)."""
        try:
            kept = KEEP if state == "Failed" else None  # a reason only goes with Failed
            await self.card_store.update(path, CardUpdate(state=state, reason=kept))
        except Exception as exc:
            self.client.show_message(
                f"cardrunner: cannot move the card: {exc}", types.MessageType.Error
            )
            return
        await self.index.read(path)
        self.card_changed(path)
        self.status.changed()

    def run_event(self, view: RunView, event: ev.Event) -> None:
        """`RunListener`: one event of one run, fanned out to every view of it. Progress,
        diagnostics and status follow at most every `COALESCE_SECONDS` (a run can say hundreds
        of things a second), at once on start, review and end; the lenses every round."""
        match event:
            case (
                ev.RoundStarted()
                | ev.RoundFinished()
                | ev.ToolStarted()
                | ev.ToolOutput()
                | ev.ReviewRequested()
            ):
                pass  # progress: in the coalesced update below
            case ev.BuildChecked():
                self.diagnostics.build(view)
            case ev.ToolFinished(name="write_file", is_error=False):
                self._warn_overlap(view, str(event.arguments.get("path")))
            case ev.Notice(level="warning"):
                self.client.show_message(f"cardrunner: {event.message}", types.MessageType.Warning)
            case ev.Notice():
                log.info("%s: %s", view.title, event.message)
            case ev.Announced():
                log.info("%s: told the model: %s", view.title, event.text)
            case ev.RunFinished():
                self.diagnostics.build(view)
                if event.reason == "config_error":
                    self.client.show_message(
                        f"cardrunner: {view.title}: {event.detail}", types.MessageType.Error
                    )
            case (
                ev.RunStarted()
                | ev.ToolFinished()
                | ev.CriterionReported()
                | ev.ReviewDecided()
                | ev.Compacted()
                | ev.ChecksRan()
                | ev.GateObjected()
                | ev.CallObserved()
            ):
                pass  # the view holds them; lenses and diagnostics below show them
            case _:
                assert_never(event)
        if isinstance(event, ev.RoundFinished):
            self._lenses_due.add(view.card_path)
        if isinstance(
            event, ev.RunStarted | ev.ReviewRequested | ev.ReviewDecided | ev.RunFinished
        ):
            self._lenses_due.add(view.card_path)
            self._follow(view)
        elif view.card_path not in self._following:
            later = asyncio.get_running_loop().call_later(COALESCE_SECONDS, self._follow, view)
            self._following[view.card_path] = later

    def _follow(self, view: RunView) -> None:
        """Show the run as it is now: its progress, the card's diagnostics, the status."""
        if (handle := self._following.pop(view.card_path, None)) is not None:
            handle.cancel()
        self.run_progress.report(view)
        self.diagnostics.refresh(view.card_path)
        self.status.changed()
        if view.card_path in self._lenses_due:  # a round ended (or the situation changed)
            self._lenses_due.discard(view.card_path)
            self.client.refresh_code_lenses()

    def _warn_overlap(self, view: RunView, path: str) -> None:
        """Two live runs wrote the same file: say so once, when the second one does."""
        for other in self.runs.views():
            if other is not view and other.live and path in other.touched:
                self.client.show_message(
                    f"cardrunner: {view.title} and {other.title} both changed {path}",
                    types.MessageType.Warning,
                )

    def run_ended(self, view: RunView) -> None:
        self.run_progress.end(view)
        self.card_changed(view.card_path)
        self.status.send()

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self._ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )


__all__ = ["CardApp"]
