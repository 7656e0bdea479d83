"""The review's `.diff` document as a place to review in: per-hunk keep/drop and line comments.

Every LSP editor can open a text file, so the `.diff` the server writes at review is where
editors without cardrunner's own client review. On it the server offers, as code lenses and
code actions: above each hunk "Drop hunk" (or "Keep hunk" once dropped), and at the top
"Accept & commit" (naming what is dropped) and "Reject" (naming the comments that will be its
reason). A dropped hunk is marked with a Hint tagged Unnecessary, so editors grey it out.
Lines the reviewer types starting with `#` are comments; Reject without a reason sends them.
"""

from __future__ import annotations

from lsprotocol import types

from cardrunner.agent.review import HunkRef
from cardrunner.git.hunks import Hunk, ParsedDiff
from cardrunner.git.quoting import quote
from cardrunner.lsp.core.protocolnames import ACCEPT, REJECT, TOGGLE_HUNK

SOURCE = "cardrunner"


def hunk_argument(ref: HunkRef) -> dict[str, object]:
    return {"path": ref.path, "hunk": ref.index}


def _hunk_command(card_uri: str, hunk: Hunk, dropped: set[HunkRef]) -> types.Command:
    drop = hunk.ref not in dropped
    verb = "✗ Drop hunk" if drop else "↺ Keep hunk"
    return types.Command(
        title=f"{verb} {hunk.index + 1} of {quote(hunk.path)} (+{hunk.added}/-{hunk.removed})",
        command=TOGGLE_HUNK,
        arguments=[card_uri, {**hunk_argument(hunk.ref), "drop": drop}],
    )


def _decide_commands(
    card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef]
) -> list[types.Command]:
    kept = sum(1 for h in parsed.hunks() if h.ref not in dropped)
    total = len(parsed.hunks())
    accept = "✓ Accept & commit" + (f" ({kept} of {total} hunks)" if dropped else "")
    comments = len(parsed.comments)
    reject = "✗ Reject" + (f" with {comments} comment(s)" if comments else "")
    return [
        types.Command(title=accept, command=ACCEPT, arguments=[card_uri]),
        types.Command(title=reject, command=REJECT, arguments=[card_uri]),
    ]


def diff_lenses(card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef]) -> list[types.CodeLens]:
    """Accept / Reject on the first line, Drop / Keep above every hunk."""
    top = types.Range(types.Position(0, 0), types.Position(0, 0))
    lenses = [
        types.CodeLens(range=top, command=c) for c in _decide_commands(card_uri, parsed, dropped)
    ]
    for hunk in parsed.hunks():
        at = types.Range(types.Position(hunk.first_line, 0), types.Position(hunk.first_line, 0))
        lenses.append(types.CodeLens(range=at, command=_hunk_command(card_uri, hunk, dropped)))
    return lenses


def diff_actions(
    card_uri: str, parsed: ParsedDiff, dropped: set[HunkRef], lines: range
) -> list[types.CodeAction]:
    """The hunks touched by the selection, then Accept / Reject (kindless: the quick-fix menu)."""
    hunks = [
        h for h in parsed.hunks() if h.first_line <= lines.stop - 1 and h.last_line >= lines.start
    ]
    commands = [_hunk_command(card_uri, h, dropped) for h in hunks]
    commands += _decide_commands(card_uri, parsed, dropped)
    return [types.CodeAction(title=c.title, command=c) for c in commands]


def dropped_diagnostics(parsed: ParsedDiff, dropped: set[HunkRef]) -> list[types.Diagnostic]:
    """A faded Hint over each dropped hunk: visible in the document, never in a problem list."""
    return [
        types.Diagnostic(
            range=types.Range(
                types.Position(h.first_line, 0), types.Position(h.last_line, len(h.lines[-1]))
            ),
            message=f"dropped: hunk {h.index + 1} of {h.path} is undone when you accept",
            severity=types.DiagnosticSeverity.Hint,
            tags=[types.DiagnosticTag.Unnecessary],
            source=SOURCE,
            code="dropped-hunk",
        )
        for h in parsed.hunks()
        if h.ref in dropped
    ]
