"""The `cardrunner.*` commands: what lenses, code actions and clients' own UIs invoke.

Commands are synchronous on purpose: pygls cannot cancel a running `executeCommand`
coroutine and leaks a future per async command, so each decides at once, spawns any
longer work as a task and returns a plain dict (documented in docs/lsp-extensions.md).
Arguments arrive as raw JSON (`*args`) and are checked here, so a bad call gets a clear
message rather than a protocol error. The handlers that pygls calls are registered before
`initialize` from the ids alone (lsp/handlers.py) and hand each call to `Commands.execute`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from cardrunner.agent.review import HunkRef
from cardrunner.git.hunks import Comment, comments_reason
from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.core.client import Client, spawn, uri_to_path
from cardrunner.lsp.core.config import SettingsFeature
from cardrunner.lsp.core.index import CardIndex
from cardrunner.lsp.features.review import ReviewHub
from cardrunner.lsp.features.runs import RunsUI
from cardrunner.run.options import ResumeGrant, RunRefused

log = logging.getLogger("cardrunner.lsp.commands")


class CommandError(Exception):
    """A command cannot do what was asked; the message is shown to the user."""


def _hunk(value: Any) -> HunkRef:
    if not isinstance(value, dict):
        raise CommandError('a hunk is {"path": "src/app.py", "hunk": 0}')
    path, index = value.get("path"), value.get("hunk")
    if not isinstance(path, str) or not isinstance(index, int) or index < 0:
        raise CommandError('a hunk is {"path": "src/app.py", "hunk": 0}')
    return HunkRef(path, index)


def _comment(value: Any) -> Comment:
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise CommandError('a comment is {"path", "line", "code", "text"} with text')
    line = value.get("line")
    return Comment(
        value["text"].strip(),
        str(value["path"]) if value.get("path") else None,
        line if isinstance(line, int) else None,
        str(value.get("code") or ""),
    )


def _options(args: Sequence[Any], index: int = 1) -> dict[str, Any]:
    if len(args) <= index or args[index] is None:
        return {}
    if not isinstance(args[index], dict):
        raise CommandError(f"argument {index + 1} must be an object")
    return dict(args[index])


class Commands:
    """Each public method is one command; `execute` carries out the one named. Runs are
    started and cards moved through the runs' feature, reviews decided through the hub."""

    def __init__(
        self,
        client: Client,
        index: CardIndex,
        settings: SettingsFeature,
        runs: RunsUI,
        reviews: ReviewHub,
    ) -> None:
        self._client = client
        self._index = index
        self._settings = settings
        self._runs = runs
        self._reviews = reviews

    def _card(self, args: Sequence[Any]) -> Path:
        """The card the first argument names (remembered in the client's spelling)."""
        if not args or not isinstance(args[0], str):
            raise CommandError("expected the card's URI as the first argument")
        path = uri_to_path(args[0])
        if path is None or not self._index.is_card(path):
            cards = self._settings.view.cards
            raise CommandError(f"not a card under '{cards}/': {args[0]}")
        self._index.remember_uri(args[0])  # answer in the client's spelling of the URI
        return path

    def execute(self, name: str, args: Sequence[Any]) -> Any:
        """Command `name` with its JSON arguments; a refusal is shown and answered."""
        try:
            return COMMANDS[name](self, args)
        except (CommandError, RunRefused) as exc:
            self._client.show_message(f"cardrunner: {exc}", types.MessageType.Error)
            return {"error": str(exc)}

    def run_card(self, args: Sequence[Any]) -> dict[str, Any]:
        """Start a run. A Done card runs again (the click asked for it), with a warning: an
        accepted review would commit a second change for work accepted once already."""
        path = self._card(args)
        entry = self._index.get(path)
        done = entry.card if entry is not None and entry.card is not None else None
        waits = self._runs.blocked(path)
        if waits and not _options(args).get("anyway"):
            raise RunRefused(
                f"{done.title if done else path.name} {waits}: use Run anyway to start it now"
            )
        started = self._runs.start_run(path, None)
        if done is not None and done.state == "Done":
            self._client.show_message(
                f"cardrunner: {done.title} was already Done; it runs again, and accepting its "
                "review commits a second change (cancel it to keep the card as it was).",
                types.MessageType.Warning,
            )
        return started

    def resume_run(self, args: Sequence[Any]) -> dict[str, Any]:
        path = self._card(args)
        opts = _options(args)
        grant = self._runs.default_grant(path)
        rounds = opts.get("grantRounds", grant.rounds)
        cost = opts.get("grantCostUsd", grant.cost_usd)
        if not isinstance(rounds, int) or not isinstance(cost, int | float):
            raise CommandError("grantRounds must be an integer and grantCostUsd a number")
        return self._runs.start_run(path, ResumeGrant(rounds, float(cost)))

    def cancel_run(self, args: Sequence[Any]) -> dict[str, Any]:
        path = self._card(args)
        return {"uri": args[0], "cancelled": self._runs.manager.cancel(path)}

    def accept_changes(self, args: Sequence[Any]) -> dict[str, Any]:
        path = self._card(args)
        opts = _options(args)
        drop = opts.get("drop", [])
        reason = opts.get("reason", "")
        if not isinstance(drop, list) or not all(isinstance(d, str) for d in drop):
            raise CommandError("'drop' must be a list of paths relative to the workspace")
        if not isinstance(reason, str):
            raise CommandError("'reason' must be text")
        hunks = [_hunk(h) for h in opts.get("dropHunks", [])]
        decided = self._reviews.accept(path, reason, drop, hunks)
        return self._decided(args[0], decided)

    def reject_changes(self, args: Sequence[Any]) -> dict[str, Any]:
        """Reason: text, or `{"reason"}`, or `{"comments": [{path, line, code, text}]}`;
        none at all sends the comments typed into the review's `.diff`, else the default."""
        path = self._card(args)
        reason = args[1] if len(args) > 1 else None
        if isinstance(reason, dict):
            comments = [_comment(c) for c in reason.get("comments") or []]
            reason = reason.get("reason") or (comments_reason(comments) if comments else None)
        if reason is not None and not isinstance(reason, str):
            raise CommandError("the reason must be text")
        return self._decided(args[0], self._reviews.reject(path, reason))

    def toggle_hunk(self, args: Sequence[Any]) -> dict[str, Any]:
        """`[uri, {"path", "hunk", "drop"?}]`: mark one hunk of the waiting review dropped or
        kept (without `drop`: flip it)."""
        path = self._card(args)
        opts = _options(args)
        drop = opts.get("drop")
        if drop is not None and not isinstance(drop, bool):
            raise CommandError("'drop' must be true or false")
        ref = _hunk(opts)
        dropped = self._reviews.toggle_hunk(path, ref, drop)
        if dropped is None:
            raise CommandError(f"no waiting review has hunk {ref.index} of {ref.path}")
        return {"uri": args[0], "path": ref.path, "hunk": ref.index, "dropped": dropped}

    def set_state(self, args: Sequence[Any]) -> dict[str, Any]:
        """`[uri, state]`: move a card by hand (New, Done, Failed), as a board drag does."""
        from cardrunner.lsp.features.board import MANUAL_STATES  # the board's: not idle

        path = self._card(args)
        state = args[1] if len(args) > 1 else None
        if state not in MANUAL_STATES:
            raise CommandError(f"a card can be moved by hand to {', '.join(MANUAL_STATES)} only")
        if self._runs.manager.is_live(path):
            raise CommandError("the card is running; cancel the run first")
        self._runs.move_card(path, str(state))
        return {"uri": args[0], "state": state}

    def _decided(self, uri: str, decided: bool) -> dict[str, Any]:
        if not decided:
            raise CommandError("no review is waiting for this card")
        return {"uri": uri, "decided": True}

    def show_diff(self, args: Sequence[Any]) -> dict[str, Any]:
        path = self._card(args)
        diff = self._reviews.last_diff(path)
        if diff is None:
            raise CommandError("this card has no diff to show yet (it appears at review)")
        spawn(self._reviews.show_diff(path))
        return {"uri": args[0], "diffPath": str(diff)}

    def show_log(self, args: Sequence[Any]) -> dict[str, Any]:
        path = self._card(args)
        log_path = self._runs.last_log(path)
        if log_path is None:
            raise CommandError("this card has no run log yet")
        spawn(self._client.show_document(from_fs_path(str(log_path)) or log_path.as_uri()))
        return {"uri": args[0], "logPath": str(log_path)}

    def debug_index(self, args: Sequence[Any]) -> dict[str, Any]:
        """What the card index holds and what it did to get there: a parse the watcher or the
        catch-up pass did not need shows here, and no timing can hide it."""
        index = self._index
        return {"cards": len(index.paths()), "scanned": index.scanned, **index.stats.as_json()}


COMMANDS = {
    names.RUN: Commands.run_card,
    names.RESUME: Commands.resume_run,
    names.CANCEL: Commands.cancel_run,
    names.ACCEPT: Commands.accept_changes,
    names.REJECT: Commands.reject_changes,
    names.SHOW_DIFF: Commands.show_diff,
    names.SHOW_LOG: Commands.show_log,
    names.TOGGLE_HUNK: Commands.toggle_hunk,
    names.SET_STATE: Commands.set_state,
    names.DEBUG_INDEX: Commands.debug_index,
}
"""One method per id of `names.COMMANDS` but `DEBUG_MODULES` (the server's own)."""
