"""The runs as the editor shows them: starting one, and every event of every run, fanned out.

`RunsUI` starts the editor's runs in the `RunManager` and is the `RunListener` of each: each
event of a run goes from here to what shows it — the progress notification, the card's
diagnostics, the status, the lenses, the review's marks — and warnings the user must see (two
runs changing the same file, a config error) become messages. Progress, diagnostics and status
are coalesced, because a run can say hundreds of things a second. It also answers what the
commands and views ask about a card's runs: its situation, its last log, the grant a resume
adds. The manager is built first, then what shows the runs (each looks them up in it), then
this, given both.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

from lsprotocol import types

from cardrunner.board.order import blocked_reason, blockers
from cardrunner.card.record import KEEP, CardUpdate
from cardrunner.lsp.core.cardstore import EditorCardStore
from cardrunner.lsp.core.client import Client, spawn
from cardrunner.lsp.core.config import SettingsFeature
from cardrunner.lsp.core.index import CardIndex
from cardrunner.lsp.features.carddiagnostics import CardDiagnostics
from cardrunner.lsp.features.codelens import CardSituation, Forecasts
from cardrunner.lsp.features.progress import RunProgress
from cardrunner.lsp.features.review import ReviewHub
from cardrunner.lsp.features.status import RunStatus
from cardrunner.record.state import RunState
from cardrunner.run.options import ResumeGrant
from cardrunner.workers.manager import RunManager

if TYPE_CHECKING:  # the events' models load with the first run, not in an idle server
    from cardrunner.agent import events as ev

log = logging.getLogger("cardrunner.lsp")

COALESCE_SECONDS = 0.1  # a run's progress, diagnostics and status change at most this often
MOVE_WAIT = 5.0
"""Seconds a board or symbol request waits for the card moves answered before it to land."""


@dataclass(frozen=True)
class RunDisplays:
    """What shows a run besides the messages: each looks the runs up in the manager."""

    diagnostics: CardDiagnostics
    progress: RunProgress
    status: RunStatus


class RunsUI:
    """The editor's runs: started here in `manager`, shown through `shown`."""

    def __init__(
        self,
        root: Path,
        client: Client,
        index: CardIndex,
        settings: SettingsFeature,
        card_store: EditorCardStore,
        reviews: ReviewHub,
        manager: RunManager,
        shown: RunDisplays,
        orphans: dict[Path, str],
    ) -> None:
        self._root = root
        self._client = client
        self._index = index
        self._settings = settings
        self._card_store = card_store
        self._reviews = reviews
        self.manager = manager
        self.forecasts = Forecasts(root, lambda: settings.view)
        """What a run of each card is likely to cost (shown on its lens and the board)."""
        self.orphans = orphans
        """Cards whose newest run log has no result and no live process → that run's id (the
        card diagnostics read it too)."""
        self._shown = shown
        self._due: dict[Path, RunState] = {}  # runs changed since shown, shown at the tick
        self._tick: asyncio.TimerHandle | None = None  # when the due runs are shown, together
        self._lenses_due: set[Path] = set()  # … whose lenses changed too
        self._lens_timer: asyncio.TimerHandle | None = None  # a round's lens refresh, due
        self._lens_sent = float("-inf")  # when the last round's lens refresh went out
        self._moves: set[asyncio.Future[None]] = set()  # card moves answered, not yet written

    # --- what commands and views ask -------------------------------------------------------

    def start_run(self, path: Path, resume: ResumeGrant | None) -> dict[str, Any]:
        busy = [v for v in self.manager.views() if v.live and v.touched and v.card_path != path]
        view = self.manager.start(path, resume, listener=self, approver=self._reviews.approver)
        self.orphans.pop(path, None)  # its log gets a result now (a resume continues it)
        for other in busy:
            self._client.show_message(
                f"cardrunner: {other.title} is still running and has changed "
                f"{', '.join(sorted(other.touched)[:8])}; if {view.title} changes them too, "
                "review both diffs with care (their commits may not apply cleanly together).",
                types.MessageType.Warning,
            )
        entry = self._index.get(path)
        if entry is not None and entry.card is not None:
            view.title = entry.card.title
        elif entry is None:  # run from a command before the watcher or the editor showed it
            spawn(self._shown.diagnostics.read(path))
        token = self._shown.progress.start(view)
        self.card_changed(path)
        self._shown.status.changed()
        return {"uri": self._index.uri(path), "runId": view.run_id, "token": token}

    def default_grant(self, path: Path) -> ResumeGrant:
        """What a resume adds when the user does not say: a quarter more of the budget that
        ran out (rounds or cost); nothing for a run that stopped for another reason."""
        limits = self._settings.view.limits
        view, entry = self.manager.get(path), self._index.get(path)
        reason = view.reason if view else None
        if reason is None and entry is not None and entry.card is not None:
            last = entry.card.last_run
            reason = (last.reason if last else None) or entry.card.reason
        rounds = max(10, limits.max_rounds // 4) if reason == "max_rounds" else 0
        cost = max(0.5, (limits.max_cost_usd or 0.0) / 4) if reason == "max_cost" else 0.0
        return ResumeGrant(rounds, cost)

    def last_log(self, path: Path) -> Path | None:
        view = self.manager.get(path)
        if view is not None and view.log_path is not None:
            return view.log_path
        entry = self._index.get(path)
        last = entry.card.last_run if entry and entry.card else None
        return (self._root / last.log).resolve() if last and last.log else None

    def situation(self, path: Path) -> CardSituation:
        return CardSituation(
            uri=self._index.uri(path),
            entry=self._index.get(path),
            view=self.manager.get(path),
            live=self.manager.is_live(path),
            reviewing=self._reviews.pending(path) is not None,
            orphan_run=self.orphans.get(path),
            blocked=self.blocked(path),
            forecast=self.forecast(path),
            **self.package(path),
        )

    def package(self, path: Path) -> dict[str, str]:
        """The card's package and why it has none, as `CardSituation` keeps them."""
        entry = self._index.get(path)
        if entry is None or entry.card is None:
            return {}
        package, refused = self._settings.view.package(entry.card.choices.package)
        return {"package": package, "package_refused": refused}

    def forecast(self, path: Path) -> str | None:
        """The card's cost forecast line (None: no readable card)."""
        entry = self._index.get(path)
        card = entry.card if entry is not None else None
        return self.forecasts.of(path, card).title() if card is not None else None

    def blocked(self, path: Path) -> str | None:
        """Why the card waits for its `depends_on:` cards (None: it need not), from the index."""
        entry = self._index.get(path)
        card = entry.card if entry is not None else None
        if card is None or not card.depends_on:
            return None
        board = [e.card for p in self._index.paths() if (e := self._index.get(p)) and e.card]
        cards = self._settings.view.cards
        found = blockers(card, board, self._root, cards)
        return blocked_reason(found) if found else None

    def card_changed(self, path: Path) -> None:
        """A card's run situation changed: its diagnostics, lenses and review marks follow."""
        self._shown.diagnostics.refresh(path)
        self._reviews.marks(path)
        self._client.refresh_code_lenses()

    def move_card(self, path: Path, state: str) -> None:
        """Move a card by hand, in the background: the command that asks has answered by the
        time the file is written, so the views wait for the moves (`moves_landed`) before they
        read the cards — a board asked right after a move shows it moved."""
        task = spawn(self.set_card_state(path, state))
        self._moves.add(task)
        task.add_done_callback(self._moves.discard)

    async def moves_landed(self, seconds: float = MOVE_WAIT) -> None:
        """Wait (at most `seconds`) until every card move answered so far is in the index."""
        if self._moves:
            await asyncio.wait(set(self._moves), timeout=seconds)

    async def set_card_state(self, path: Path, state: str) -> None:
        """Move a card by hand: its front matter changes (in the buffer when it is open)."""
        try:
            kept = KEEP if state == "Failed" else None  # a reason only goes with Failed
            await self._card_store.update(path, CardUpdate(state=state, reason=kept))
        except Exception as exc:
            self._client.show_message(
                f"cardrunner: cannot move the card: {exc}", types.MessageType.Error
            )
            return
        await self._index.read(path)
        self.card_changed(path)
        self._shown.status.changed()

    # --- `RunListener` ----------------------------------------------------------------------

    def run_event(self, view: RunState, event: ev.Event) -> None:
        """One event of one run, fanned out to every view of it. Progress, diagnostics and
        status follow at most every `COALESCE_SECONDS`, at once on start, review and end; the
        lenses every round, at most every `COALESCE_SECONDS` for all runs together. The runs
        share one tick: what eight runs changed in it leaves in one turn of the loop, and so in
        one write to the editor (a tick per run woke the editor, and this server, eight times
        as often, each time taking a core on a loaded machine)."""
        from cardrunner.agent import events as ev  # loaded: the event is one

        self._show_now(view, event)
        if isinstance(event, ev.RoundFinished):
            self._lenses_due.add(view.card_path)
        if isinstance(
            event, ev.RunStarted | ev.ReviewRequested | ev.ReviewDecided | ev.RunFinished
        ):
            self._lenses_due.add(view.card_path)
            self._follow_now(view)
        else:
            self._due[view.card_path] = view
            if self._tick is None:
                loop = asyncio.get_running_loop()
                self._tick = loop.call_later(COALESCE_SECONDS, self._follow_due)

    def _show_now(self, view: RunState, event: ev.Event) -> None:
        """What an event shows at once: build problems, warnings, the log's lines."""
        from cardrunner.agent import events as ev  # loaded: the event is one

        match event:
            case (
                ev.RoundStarted()
                | ev.RoundFinished()
                | ev.ToolStarted()
                | ev.ToolOutput()
                | ev.ReviewRequested()
            ):
                pass  # progress: in the coalesced update
            case ev.BuildChecked():
                self._shown.diagnostics.build(view)
            case ev.ToolFinished(name="write_file", is_error=False):
                self._warn_overlap(view, str(event.arguments.get("path")))
            case ev.Notice(level="warning"):
                self._client.show_message(f"cardrunner: {event.message}", types.MessageType.Warning)
            case ev.Notice():
                log.info("%s: %s", view.title, event.message)
            case ev.Announced():
                log.info("%s: told the model: %s", view.title, event.text)
            case ev.RunFinished():
                self._shown.diagnostics.build(view)
                if event.reason == "config_error":
                    self._client.show_message(
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
                pass  # the view holds them; lenses and diagnostics show them
            case _:
                assert_never(event)

    def _follow_now(self, view: RunState) -> None:
        """Show one run as it is now, at once: its progress, the card's diagnostics, the
        status, and its lenses if they changed."""
        self._due.pop(view.card_path, None)
        self._show(view)
        self._shown.status.changed()  # runs started together share one status
        if view.card_path in self._lenses_due:
            self._lenses_due.discard(view.card_path)
            self._refresh_lenses()

    def _follow_due(self) -> None:
        """The tick: every run changed since the last one, shown together; one status for
        all, and one lens refresh for all whose round ended (at most every
        `COALESCE_SECONDS`)."""
        self._tick = None
        due, self._due = self._due, {}
        if not due:  # each was shown at once since (its start, review or end): nothing is new
            return
        for view in due.values():
            self._show(view)
        self._shown.status.send()
        if self._lenses_due & due.keys():
            self._lenses_due -= due.keys()
            self._refresh_lenses_soon()

    def _show(self, view: RunState) -> None:
        self._shown.progress.report(view)
        self._shown.diagnostics.refresh(view.card_path)

    def _refresh_lenses_soon(self) -> None:
        """A round ended: one `codeLens/refresh` re-asks every lens of every card, so the rounds
        of all runs share one per `COALESCE_SECONDS` (eight runs' rounds made up to 80 a second,
        each a request, an answer and, in an editor, the lenses asked again)."""
        if self._lens_timer is not None:
            return  # one is due: it shows this round too
        loop = asyncio.get_running_loop()
        wait = self._lens_sent + COALESCE_SECONDS - loop.time()
        if wait <= 0:
            self._refresh_lenses()
        else:
            self._lens_timer = loop.call_later(wait, self._refresh_lenses)

    def _refresh_lenses(self) -> None:
        if self._lens_timer is not None:
            self._lens_timer.cancel()
            self._lens_timer = None
        self._lens_sent = asyncio.get_running_loop().time()
        self._client.refresh_code_lenses()

    def _warn_overlap(self, view: RunState, path: str) -> None:
        """Two live runs wrote the same file: say so once, when the second one does."""
        for other in self.manager.views():
            if other is not view and other.live and path in other.touched:
                self._client.show_message(
                    f"cardrunner: {view.title} and {other.title} both changed {path}",
                    types.MessageType.Warning,
                )

    def run_ended(self, view: RunState) -> None:
        self._shown.progress.end(view)
        self.card_changed(view.card_path)
        self._shown.status.send()
        spawn(self._learn_costs())

    async def _learn_costs(self) -> None:
        """A run ended: its cost is in git now (or soon), and the forecasts learn from it."""
        if await self.forecasts.load():
            self._client.refresh_code_lenses()


__all__ = ["COALESCE_SECONDS", "RunDisplays", "RunsUI"]
