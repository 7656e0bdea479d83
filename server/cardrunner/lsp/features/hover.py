"""Hover on a card: what the run knows about the line under the cursor.

On the title: the card's state and its current or last run (rounds, tokens, cost, commit, and
the decisive lines of its last failed build or test). On an
acceptance criterion: pending, verified with the evidence, or failed with why. Elsewhere nothing,
so the editor's own Markdown hover is not crowded out.
"""

from __future__ import annotations

from lsprotocol import types

from cardrunner.lsp.features.codelens import CardSituation
from cardrunner.run.view import Criterion


def hover(situation: CardSituation, line: int) -> types.Hover | None:
    card = situation.entry.card if situation.entry else None
    if card is None:
        return None
    view = situation.view
    if line == card.title_line:
        text = f"**{card.title}** — {card.state}"
        if view is not None:
            text += f"\n\nrun `{view.run_id}`: {view.state} · {view.summary()}"
            if view.reason:
                text += f"\n\nreason: `{view.reason}` {view.detail}"
            if view.why:
                text += "\n\nlast failure:\n\n```text\n" + "\n".join(view.why) + "\n```"
            if view.commit:
                text += f"\n\ncommit `{view.commit[:10]}`"
        elif (last := card.last_run) is not None:
            text += (
                f"\n\nlast run `{last.id}`: {last.result}"
                f"{' (' + last.reason + ')' if last.reason else ''} · "
                f"{last.rounds} rounds · {last.tokens} tok · ${last.cost_usd}"
            )
        return _markdown(text)
    if line in card.criteria_lines:
        index = card.criteria_lines.index(line)
        if view is None or index >= len(view.criteria):
            return _markdown(f"criterion {index + 1}: not checked by a run yet")
        return _markdown(_criterion(index + 1, view.criteria[index]))
    return None


def _criterion(number: int, c: Criterion) -> str:
    """The evidence ledger's entry: claim, cited calls with their quotes and saved results."""
    detail = f": {c.evidence}" if c.evidence else ""
    text = f"criterion {number}: **{c.status}**{detail}"
    if c.stale:
        text += f"\n\nstale: {c.stale}"
    for cite in c.cites:
        saved = f" — [saved result]({cite.artifact})" if cite.artifact else ""
        text += f"\n\n- `{cite.tool}` `{cite.call}` (round {cite.round}): “{cite.quote}”{saved}"
    if c.commit:
        text += f"\n\nchecked on commit `{c.commit[:10]}`"
    return text


def _markdown(text: str) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
