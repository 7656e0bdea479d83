"""What a card's diagnostics say: its parse problems, and what its run is doing or did.

Always: each parse problem on its line, and a card whose last run stopped without finishing
(left `In Work`, recorded `interrupted`, or a run log without a result) is flagged "interrupted". With a run: one diagnostic on the title line with the latest
round, one per acceptance criterion, and at the end the result. Severities say what needs
attention, because a problem list full of successes hides the one failure: verified criteria,
a running round and a done result are Hints (shown in the editor, left out of problem lists);
a waiting review is Information; a criterion still pending (or stale) is a Hint while the run
goes on — that is progress, not something for the user — and a Warning once it is over; a
failed criterion and a failed run are Errors. Criteria are numbered for people, from 1
(`criterion-1`). Lines come from the card as it reads now, so a criterion's diagnostic follows
the criterion when the front matter grows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from lsprotocol import types

from cardrunner.card.text import split_lines
from cardrunner.lsp.core.diagnostics import BUILD, CARD, RUN, DiagnosticsStore
from cardrunner.lsp.core.index import CardEntry, CardIndex
from cardrunner.lsp.features.progress import doing
from cardrunner.record.state import Criterion, RunState

SOURCE = "cardrunner"
S = types.DiagnosticSeverity


def _line_range(lines: list[str], line: int, end_line: int | None = None) -> types.Range:
    last = max(len(lines) - 1, 0)
    start = min(max(line, 0), last)
    end = min(max(end_line if end_line is not None else start, start), last)
    width = len(lines[end].rstrip("\r\n")) if lines else 0
    return types.Range(types.Position(start, 0), types.Position(end, width))


def _diag(
    lines: list[str], line: int, message: str, severity: S, code: str, end: int | None = None
) -> types.Diagnostic:
    return types.Diagnostic(
        range=_line_range(lines, line, end),
        message=message,
        severity=severity,
        source=SOURCE,
        code=code,
    )


def _state_line(lines: list[str]) -> int:
    for number, text in enumerate(lines[1:], start=1):
        if text.strip() in ("---", "..."):
            break
        if text.startswith("state:"):
            return number
    return 0


def interruption(entry: CardEntry, orphan_run: str | None) -> str | None:
    """Why the card reads as interrupted (no run of it is going on now), or None.

    Three ways to know: a newest run log without a result (the server or its editor died
    mid-run; the card's state may never have reached the disk), a card left `In Work`, and a
    last run recorded `interrupted` (its editor went away and the server stopped it)."""
    card = entry.card
    if card is None:
        return None
    if orphan_run is not None:
        return (
            f"interrupted — run {orphan_run} stopped without a result (its server or editor "
            "died); resume it or run the card again"
        )
    if card.state == "In Work":
        return "interrupted — resume or reset (the card is In Work but no run is going on)"
    last = card.last_run
    if card.state == "Failed" and last is not None and last.reason == "interrupted":
        return "interrupted — its run stopped when the editor went away; resume it"
    return None


def card_problems(
    entry: CardEntry, live: bool, orphan_run: str | None = None, idle: bool = True
) -> list[types.Diagnostic]:
    """Parse problems, plus the 'interrupted' warning for a card whose run stopped without
    finishing (only while no run of it goes on, nor has in this session: `idle`)."""
    lines = split_lines(entry.text)
    out = [
        _diag(
            lines,
            p.line,
            p.message,
            S.Error if p.severity == "error" else S.Warning,
            "card",
            p.end_line,
        )
        for p in entry.problems
    ]
    message = interruption(entry, orphan_run) if idle and not live else None
    if message is not None:
        out.append(_diag(lines, _state_line(lines), message, S.Warning, "interrupted"))
    return out


def run_diagnostics(entry: CardEntry, view: RunState) -> list[types.Diagnostic]:
    """The run's round summary (while live), each criterion, and its result (when over)."""
    lines = split_lines(entry.text)
    card = entry.card
    title_line = card.title_line if card else 0
    out: list[types.Diagnostic] = []
    if view.live:
        text = doing(view)
        if view.last_round_text:
            text += f"\n{view.last_round_text[:300]}"
        if view.why:
            text += "\nlast failure:\n" + "\n".join(view.why[:4])
        severity = S.Information if view.state == "review" else S.Hint
        out.append(_diag(lines, title_line, text, severity, "run"))
    for index, criterion in enumerate(view.criteria):
        line = card.criteria_lines[index] if card and index < len(card.criteria_lines) else 0
        message, severity = _criterion_message(index + 1, criterion, view.live)
        out.append(_diag(lines, line, message, severity, f"criterion-{index + 1}"))
    if view.state == "done" and view.unmerged_branch:  # not on the user's branch: not done
        message = (
            f"committed on {view.unmerged_branch} only ({(view.commit or '')[:10]}): it does "
            "not apply cleanly to your branch — merge or rebase it yourself"
        )
        out.append(_diag(lines, title_line, message, S.Warning, "result"))
    elif view.state == "done":
        commit = f" · commit {view.commit[:10]}" if view.commit else ""
        message = f"done in {view.round} rounds · {view.cost(2)}{commit}"
        out.append(_diag(lines, title_line, message, S.Hint, "result"))
    elif view.state == "verified":  # the checks held, but nothing was committed: not Done
        message = f"verified, not committed, in {view.round} rounds · {view.cost(2)}"
        out.append(_diag(lines, title_line, message, S.Information, "result"))
    elif view.state == "failed":
        detail = f": {view.detail}" if view.detail else ""
        why = "".join(f"\n{line}" for line in view.why[:4])
        message = f"failed ({view.reason}){detail}{why}"
        out.append(_diag(lines, title_line, message, S.Error, "result"))
    return out


def _criterion_message(
    number: int, c: Criterion, live: bool
) -> tuple[str, types.DiagnosticSeverity]:
    """The criterion's ledger line: the claim, the calls and quotes it rests on, the commit.

    While the run goes on, a criterion not verified yet (or to verify again) is its progress,
    not a problem: a Hint, kept out of the Problems panel; a Warning once the run is over."""
    open_ = S.Hint if live else S.Warning
    cites = "".join(f'\n  {x.tool} {x.call}: "{x.quote}"' for x in c.cites)
    on = f" (checked on {c.commit[:10]})" if c.commit else ""
    match c.status:
        case "verified":
            return f"verified{on}: {c.evidence}{cites}", S.Hint
        case "failed":
            return f"failed: {c.evidence}{cites}", S.Error
        case "stale":
            return f"stale — {c.stale}; verify again: {c.evidence}{cites}", open_
        case "pending":
            return f"pending: criterion {number} not verified yet", open_
        case _:
            assert_never(c.status)


class CardDiagnostics:
    """Recomputes a card's `card` and `run` diagnostics and a run's `build` diagnostics."""

    def __init__(
        self,
        index: CardIndex,
        store: DiagnosticsStore,
        run_of: Callable[[Path], RunState | None],
        live: Callable[[Path], bool],
        root: Callable[[], Path],
        orphan_run: Callable[[Path], str | None] = lambda path: None,
    ) -> None:
        self._index, self._store, self._run_of, self._live, self._root = (
            index,
            store,
            run_of,
            live,
            root,
        )
        self._orphan_run = orphan_run
        index.follow(self.refresh)  # a card whose text changed, whoever read it: shown anew

    def refresh(self, path: Path) -> None:
        entry = self._index.get(path)
        uri = self._index.uri(path)
        if entry is None:
            self._store.clear_uri(uri)
            return
        view = self._run_of(path)
        problems = card_problems(entry, self._live(path), self._orphan_run(path), view is None)
        self._store.set(CARD, uri, problems)
        self._store.set(RUN, uri, run_diagnostics(entry, view) if view else [])

    async def read(self, path: Path) -> None:
        """Read the card from the disk again (closed in the editor, or not seen yet); its
        diagnostics follow."""
        await self._index.read(path)
        self.refresh(path)

    def build(self, view: RunState) -> None:
        """Replace the run's build problems; a finished run (no problems) clears them."""
        root = self._root()
        wanted: dict[str, list[types.Diagnostic]] = {}
        for rel, problems in view.problems.items():
            path = Path(rel) if Path(rel).is_absolute() else root / rel
            uri = self._index.uri(path.resolve())
            wanted[uri] = [
                types.Diagnostic(
                    range=types.Range(
                        types.Position(max(p.line - 1, 0), max(p.column - 1, 0)),
                        types.Position(max(p.line - 1, 0), max(p.column - 1, 0) + 1_000),
                    ),
                    message=p.message,
                    severity=S.Error if p.severity == "error" else S.Warning,
                    source=SOURCE,
                    code=view.run_id,
                )
                for p in problems
            ]
        owned = f"{BUILD}:{view.run_id}"
        for uri in self._store.uris(owned):
            if uri not in wanted:
                self._store.set(owned, uri, [])
        for uri, diags in wanted.items():
            self._store.set(owned, uri, diags)
