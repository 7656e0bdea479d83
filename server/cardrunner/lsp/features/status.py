"""`cardrunner/runStatus`: every run of this session in one notification, lightly debounced.

A status bar or a run list needs the whole picture, not a diff: each notification carries
every run the server knows (live ones and the last of each card). Many events arrive within
milliseconds (a tool start and finish), so changes within `DEBOUNCE` seconds are sent once.
It also carries the sandbox mode in force, so a status item can say whether the model's code
runs confined before any run starts.
Optional for clients; documented in docs/lsp-extensions.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.core.client import Client
from cardrunner.record.state import RunState

DEBOUNCE = 0.05


def status_entry(view: RunState, uri: str) -> dict[str, Any]:
    """One run as the notification carries it."""
    return {
        "uri": uri,
        "title": view.title,
        "runId": view.run_id,
        "state": view.state,
        "round": view.round,
        "maxRounds": view.max_rounds,
        "tokens": view.tokens,
        "costUsd": round(view.cost_usd, 4),
        "costEstimated": view.cost_estimated,
        "tool": view.tool,
        "reason": view.reason,
        "logPath": str(view.log_path) if view.log_path else None,
        "commit": view.commit,
        "unmergedBranch": view.unmerged_branch,
        "summary": view.summary(),
    }


class RunStatus:
    """Sends `cardrunner/runStatus` at most once per `DEBOUNCE` seconds while runs change."""

    def __init__(
        self,
        client: Client,
        views: Callable[[], list[RunState]],
        uri: Callable[[Path], str],
        sandbox: Callable[[], str],
    ) -> None:
        self._client = client
        self._sandbox = sandbox
        self._uri = uri
        self._views = views
        self._handle: asyncio.TimerHandle | None = None

    def changed(self) -> None:
        if self._handle is not None:
            return
        self._handle = asyncio.get_running_loop().call_later(DEBOUNCE, self.send)

    def send(self) -> None:
        """Send now (also used for the last state of a run, so it is never lost to debouncing)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        runs = [status_entry(v, self._uri(v.card_path)) for v in self._views()]
        self._client.notify(names.RUN_STATUS, {"runs": runs, "sandbox": self._sandbox()})
