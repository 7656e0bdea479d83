"""The read-only views of the server: lenses, code actions, hover, the board, workspace symbols.

Handlers stay thin: they find what the request is about — a card, or the `.diff` of a waiting
review — and hand it to the feature that computes the answer. The review's diff document gets
its own lenses and actions (per-hunk keep/drop, accept, reject) and marks on dropped hunks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cardrunner.lsp.core.diagnostics import REVIEW
from cardrunner.lsp.features.board import (
    BOARD,
    Board,
    BoardReview,
    build_board,
    workspace_symbols,
)
from cardrunner.lsp.features.codelens import code_actions, code_lenses
from cardrunner.lsp.features.hover import hover
from cardrunner.lsp.features.reviewdiff import diff_actions, diff_lenses, dropped_diagnostics
from cardrunner.run.log import NotARunLog
from cardrunner.run.summary import summarize_log

RUN_SUMMARY = "cardrunner/runSummary"
SCAN_WAIT = 10.0
"""Seconds a board or symbol request waits for the first scan of the cards folder."""

if TYPE_CHECKING:
    from cardrunner.lsp.server import CardServer


def board(ls: CardServer) -> Board:
    """The board as it stands now (cards the index knows, runs the manager knows)."""
    paths = set(ls.index.paths()) | {v.card_path for v in ls.runs.views()}
    return build_board(sorted(paths), ls.root, ls.situation, lambda p: _review(ls, p))


def _review(ls: CardServer, path: Path) -> BoardReview | None:
    pending = ls.reviews.pending(path)
    if pending is None:
        return None
    r = pending.request
    return BoardReview(diff_path=str(pending.diff_path), files=list(r.files), message=r.message)


async def run_summary(ls: CardServer, path: Path) -> dict[str, Any]:
    """The card's current or last run told as `cardrunner log` tells it, plus what the running
    command has printed so far: the live run view of every client."""
    log_path = ls.last_log(path)
    view = ls.runs.get(path)
    live = bool(view and view.live)
    if log_path is None:
        return {"uri": ls.index.uri(path), "logPath": None, "live": live, "text": "no run yet"}
    try:
        text = await asyncio.to_thread(summarize_log, log_path)
    except (OSError, NotARunLog) as exc:
        text = f"the run log cannot be read yet: {exc}"
    if view is not None and live:
        text += f"\n\nnow: {view.live_line()}"
        if view.tool and view.output:
            text += f"\n── {view.tool} output, as it arrives ──\n" + "\n".join(view.output)
    return {"uri": ls.index.uri(path), "logPath": str(log_path), "live": live, "text": text}


def review_marks(ls: CardServer, card_path: Path) -> None:
    """Grey out the dropped hunks of the card's review diff; clear them when it is decided."""
    diff = ls.reviews.last_diff(card_path)
    if diff is None:
        return
    uri = ls.index.uri(diff)
    pending = ls.reviews.pending(card_path)
    if pending is None:
        ls.store.set(REVIEW, uri, [])
        return
    ls.store.set(REVIEW, uri, dropped_diagnostics(ls.reviews.parsed(pending), pending.dropped))


def _diff_review(ls: CardServer, uri: str) -> tuple[str, Any] | None:
    """(card URI, pending review) when `uri` is the `.diff` of a waiting review."""
    path = ls.index.remember_uri(uri)
    pending = ls.reviews.for_diff(path) if path is not None else None
    if pending is None:
        return None
    return ls.index.uri(pending.card_path), pending


def register_views(server: CardServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: CardServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        found = _diff_review(ls, params.text_document.uri)
        if found is not None:
            card_uri, pending = found
            return diff_lenses(card_uri, ls.reviews.parsed(pending), pending.dropped)
        path = ls.index.remember_uri(params.text_document.uri)
        if path is None or not ls.index.is_card(path):
            return []
        if ls.index.get(path) is None:  # asked before the watcher saw it
            await ls.index.read(path)
        return code_lenses(path, ls.situation(path))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    async def code_action(ls: CardServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        found = _diff_review(ls, params.text_document.uri)
        if found is not None:
            card_uri, pending = found
            lines = range(params.range.start.line, params.range.end.line + 1)
            return diff_actions(card_uri, ls.reviews.parsed(pending), pending.dropped, lines)
        path = ls.index.remember_uri(params.text_document.uri)
        if path is None or not ls.index.is_card(path):
            return []
        if ls.index.get(path) is None:
            await ls.index.read(path)
        only = list(params.context.only) if params.context.only else None
        return code_actions(path, ls.situation(path), only)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: CardServer, params: types.HoverParams) -> types.Hover | None:
        path = ls.index.remember_uri(params.text_document.uri)
        if path is None or not ls.index.is_card(path):
            return None
        return hover(ls.situation(path), params.position.line)

    @server.feature(BOARD)
    async def on_board(ls: CardServer, params: Any) -> dict[str, Any]:
        await ls.index.wait_scanned(SCAN_WAIT)
        return board(ls).model_dump(mode="json", by_alias=True)

    @server.feature(RUN_SUMMARY)
    async def on_run_summary(ls: CardServer, params: Any) -> dict[str, Any]:
        uri = getattr(params, "uri", None) or (
            params.get("uri") if isinstance(params, dict) else None
        )
        path = ls.index.remember_uri(uri) if isinstance(uri, str) else None
        if path is None:
            return {"error": 'expected {"uri": <the card\'s URI>}'}
        return await run_summary(ls, path)

    @server.feature(types.WORKSPACE_SYMBOL)
    async def on_symbol(
        ls: CardServer, params: types.WorkspaceSymbolParams
    ) -> list[types.SymbolInformation]:
        await ls.index.wait_scanned(SCAN_WAIT)
        return workspace_symbols(board(ls), params.query)
