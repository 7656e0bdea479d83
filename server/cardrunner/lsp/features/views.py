"""The read-only views of the server: lenses, code actions, hover, the board, workspace symbols.

Each request finds what it is about — a card, or the `.diff` of a waiting review — and hands it
to the feature that computes the answer. The review's diff document gets its own lenses and
actions (per-hunk keep/drop, accept, reject); its marks on dropped hunks are the review's
(features/review.py). Loaded after
`initialize` with the other features; the handlers (handlers.py) forward to `Views`.

Hover on a card is answered here: what the run knows about the line under the cursor. On the
title: the card's state and its current or last run (rounds, tokens, cost, commit, and the
decisive lines of its last failed build or test). On an acceptance criterion: pending, verified
with the evidence, or failed with why. Elsewhere nothing, so the editor's own Markdown hover is
not crowded out.

A hover is Markdown the editor renders, and everything in it but its labels is a stranger's text:
the card's title (an imported issue's), the model's evidence and quotes, a failing test's output.
So each such piece is made inert (`inert`, `code`, `fenced`): Markdown and HTML are escaped, not
dropped (`<img onerror>` reads as itself), a link or image cannot form (`![x](https://…?data)`
is shown, not fetched), and anything with a scheme (`https://`, `command:`, `javascript:`,
`file:`) is a code span, which no editor turns into a link.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cardrunner.lsp.core.index import CardIndex
from cardrunner.lsp.features.codelens import code_actions, code_lenses
from cardrunner.lsp.features.review import (
    PendingReview,
    ReviewHub,
    diff_actions,
    diff_lenses,
)
from cardrunner.lsp.features.runs import RunsUI
from cardrunner.record.state import RunState

if TYPE_CHECKING:  # the board's and the run logs' models load with their first request
    from cardrunner.lsp.features.board import Board, BoardReview
    from cardrunner.record.account import RunAccounts

from cardrunner.lsp.features.codelens import CardSituation
from cardrunner.record.state import Criterion


def hover(situation: CardSituation, line: int) -> types.Hover | None:
    card = situation.entry.card if situation.entry else None
    if card is None:
        return None
    view = situation.view
    if line == card.title_line:
        text = f"**{inert(card.title)}** — {inert(card.state)}"
        if situation.package or situation.package_refused:  # the repository's words: inert
            text += f"\n\n{inert(situation.package or situation.package_refused)}"
        if view is not None:
            text += f"\n\nrun {code(view.run_id)}: {inert(view.state)} · {inert(view.summary())}"
            if view.reason:
                text += f"\n\nreason: {code(view.reason)} {inert(view.detail)}"
            if view.why:
                text += "\n\nlast failure:\n\n" + fenced("\n".join(view.why))
            if view.commit:
                text += f"\n\ncommit {code(view.commit[:10])}"
        elif (last := card.last_run) is not None:
            reason = f" ({last.reason})" if last.reason else ""
            said = f"{last.result}{reason} · {last.rounds} rounds · {last.tokens} tok"
            cost = f" · {inert(shown)}" if (shown := last.cost(4)) else ""
            text += f"\n\nlast run {code(str(last.id))}: {inert(said)}{cost}"
        return _markdown(text)
    if line in card.criteria_lines:
        index = card.criteria_lines.index(line)
        if view is None or index >= len(view.criteria):
            return _markdown(f"criterion {index + 1}: not checked by a run yet")
        return _markdown(_criterion(index + 1, view.criteria[index]))
    return None


def _criterion(number: int, c: Criterion) -> str:
    """The evidence ledger's entry: claim, cited calls with their quotes and saved results."""
    detail = f": {inert(c.evidence)}" if c.evidence else ""
    text = f"criterion {number}: **{inert(c.status)}**{inert(c.where)}{detail}"
    if c.stale:
        text += f"\n\nstale: {inert(c.stale)}"
    for cite in c.cites:
        saved = f" — saved result {code(cite.artifact)}" if cite.artifact else ""
        quote = inert(cite.quote)
        text += f"\n\n- {code(cite.tool)} {code(cite.call)} (round {cite.round}): “{quote}”{saved}"
    for shot in c.screenshots:  # cardrunner's own files under the run's folder
        text += f"\n\n- screenshot {code(shot)}"
    if c.commit:
        text += f"\n\nchecked on commit {code(c.commit[:10])}"
    return text


_PUNCTUATION = re.compile(r"([\\`*_\[\]<>&!~|])")
"""What can start something live inline: emphasis, code, a link or image (`[`, `]`, `!`), raw
HTML and entities (`<`, `>`, `&`), strikethrough, tables. Each is backslash-escaped, which
CommonMark allows for any ASCII punctuation. Block syntax (`#`, `-`, `1.`) needs a line start,
and an inert piece never has one: it is one line, after a label."""
_SCHEMED = re.compile(
    r"(?i)\b(?:[a-z][a-z0-9+.-]*://|(?:command|javascript|vbscript|file|data|mailto|vscode):)\S*"
    r"|\bwww\.\S+"
)
"""What an editor could link (GFM autolinks, markdown-it's linkify) or run: shown as code."""


def inert(text: object) -> str:
    """`text` as Markdown that renders as exactly its characters, with nothing live in it."""
    value = " ".join(str(text).split())  # one paragraph: no block can start inside it
    out, at = [], 0
    for found in _SCHEMED.finditer(value):
        out += [_PUNCTUATION.sub(r"\\\1", value[at : found.start()]), code(found.group())]
        at = found.end()
    out.append(_PUNCTUATION.sub(r"\\\1", value[at:]))
    return "".join(out)


def code(text: object) -> str:
    """An inline code span holding `text` (one line); its fence is longer than any run of
    backticks inside, so nothing in it can close it early."""
    value = " ".join(str(text).split()) or " "
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", value)), default=0) + 1)
    return f"{ticks} {value} {ticks}"


def fenced(text: str) -> str:
    """A fenced `text` block around `text`, its fence longer than any in it."""
    longest = max((len(r) for r in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _markdown(text: str) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


SCAN_WAIT = 10.0
"""Seconds a board or symbol request waits for the first scan of the cards folder."""


class Views:
    """What the read-only requests answer, from the cards, the runs and the reviews."""

    def __init__(
        self,
        root: Path,
        index: CardIndex,
        runs: RunsUI,
        reviews: ReviewHub,
    ) -> None:
        self._root = root
        self._index = index
        self._runs = runs
        self._reviews = reviews
        self._accounts: RunAccounts | None = None

    @property
    def accounts(self) -> RunAccounts:
        """The run logs read so far, told as `cardrunner log` tells them (made at first use)."""
        if self._accounts is None:
            from cardrunner.record.account import RunAccounts

            self._accounts = RunAccounts()
        return self._accounts

    def board(self) -> Board:
        """The board as it stands now (cards the index knows, runs the manager knows)."""
        from cardrunner.lsp.features.board import build_board

        paths = set(self._index.paths()) | {v.card_path for v in self._runs.manager.views()}
        return build_board(sorted(paths), self._root, self._runs.situation, self._review)

    def _review(self, path: Path) -> BoardReview | None:
        from cardrunner.lsp.features.board import BoardReview

        pending = self._reviews.pending(path)
        if pending is None:
            return None
        r = pending.request
        return BoardReview(diff_path=str(pending.diff_path), files=list(r.files), message=r.message)

    async def run_account(
        self, path: Path, full: bool = False, timeline: bool = False
    ) -> dict[str, Any]:
        """The card's current or last run told as `cardrunner log` tells it (while it goes on,
        its opening and newest lines unless `full`), plus what the running command has printed
        so far: the live run view of every client. With `timeline`, the same run as rounds
        (record/account.py) for a client that draws it itself."""
        from cardrunner.record.log import NotARunLog

        log_path = self._runs.last_log(path)
        view = self._runs.manager.get(path)
        uri = self._index.uri(path)
        live = bool(view and view.live)
        if log_path is None:
            return {"uri": uri, "logPath": None, "live": live, "text": "no run yet"}
        try:
            text = await asyncio.to_thread(self.accounts.text, log_path, live=live, full=full)
        except (OSError, NotARunLog) as exc:
            text = f"the run log cannot be read yet: {exc}"
        if view is not None and live:
            text += f"\n\nnow: {view.live_line()}"
            if view.tool and view.output:
                text += f"\n── {view.tool} output, as it arrives ──\n" + "\n".join(view.output)
        answer = {"uri": uri, "logPath": str(log_path), "live": live, "text": text}
        if timeline:
            answer["timeline"] = await self._timeline(log_path, view if live else None)
        return answer

    async def _timeline(self, log_path: Path, live: RunState | None) -> dict[str, Any] | None:
        """The run as rounds, with the call running now and its output so far while it runs."""
        from cardrunner.record.log import NotARunLog

        try:
            rounds = await asyncio.to_thread(self.accounts.timeline, log_path, live=bool(live))
        except (OSError, NotARunLog):
            return None
        if live is not None:
            rounds |= {"state": live.state, "round": live.round, "tool": live.tool}
            rounds["output"] = list(live.output) if live.tool else []
        return rounds

    def _diff_review(self, path: Path | None) -> tuple[str, PendingReview] | None:
        """(card URI, pending review) when `path` is the `.diff` of a waiting review."""
        pending = self._reviews.for_diff(path) if path is not None else None
        if pending is None:
            return None
        return self._index.uri(pending.card_path), pending

    async def _card(self, path: Path | None) -> Path | None:
        """The card at `path`, read first if the watcher has not seen it yet; None if none."""
        index = self._index
        if path is None or not index.is_card(path):
            return None
        if index.get(path) is None:  # asked before the watcher saw it
            await index.read(path)
        return path

    # --- the requests -----------------------------------------------------------------------

    async def code_lens(self, params: types.CodeLensParams) -> list[types.CodeLens]:
        asked = self._index.remember_uri(params.text_document.uri)  # resolved once: a `realpath`
        found = self._diff_review(asked)
        if found is not None:
            card_uri, pending = found
            return diff_lenses(card_uri, self._reviews.parsed(pending), pending.dropped)
        path = await self._card(asked)
        return [] if path is None else code_lenses(path, self._runs.situation(path))

    async def code_action(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        asked = self._index.remember_uri(params.text_document.uri)
        found = self._diff_review(asked)
        if found is not None:
            card_uri, pending = found
            lines = range(params.range.start.line, params.range.end.line + 1)
            return diff_actions(card_uri, self._reviews.parsed(pending), pending.dropped, lines)
        path = await self._card(asked)
        if path is None:
            return []
        only = list(params.context.only) if params.context.only else None
        return code_actions(path, self._runs.situation(path), only)

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        path = self._index.remember_uri(params.text_document.uri)
        if path is None or not self._index.is_card(path):
            return None
        return hover(self._runs.situation(path), params.position.line)

    async def board_request(self) -> dict[str, Any]:
        await self._index.wait_scanned(SCAN_WAIT)
        await self._runs.moves_landed()
        return self.board().model_dump(mode="json", by_alias=True)

    async def run_account_request(self, params: Any) -> dict[str, Any]:
        uri, full = _param(params, "uri"), _param(params, "full")
        path = self._index.remember_uri(uri) if isinstance(uri, str) else None
        if path is None:
            return {"error": 'expected {"uri": <the card\'s URI>}'}
        timeline = _param(params, "timeline") is True
        return await self.run_account(path, full=full is True, timeline=timeline)

    async def symbols(self, params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
        from cardrunner.lsp.features.board import workspace_symbols

        await self._index.wait_scanned(SCAN_WAIT)
        await self._runs.moves_landed()
        return workspace_symbols(self.board(), params.query)


def _param(params: Any, name: str) -> Any:
    """A custom request's parameter (pygls hands them over as an object or a dict)."""
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)
