"""Every name of cardrunner's own LSP surface: commands, custom requests, notifications.

Lenses and code actions offer the commands, the review's diff document links to them, and the
handlers register one for each (before `initialize` is answered, from this table alone: the
commands are part of the capabilities). They are the surface other editors rely on
(docs/lsp-extensions.md), so each is spelled here once on the server's side; the VS Code client
mirrors them in client-vscode/src/protocol.ts, and tests/unit/lsp/test_protocol_names.py keeps
that copy and the document the same as this module.
"""

from __future__ import annotations

RUN = "cardrunner.runCard"
CANCEL = "cardrunner.cancelRun"
RESUME = "cardrunner.resumeRun"
ACCEPT = "cardrunner.acceptChanges"
REJECT = "cardrunner.rejectChanges"
SHOW_DIFF = "cardrunner.showDiff"
SHOW_LOG = "cardrunner.showLog"
TOGGLE_HUNK = "cardrunner.toggleHunk"
SET_STATE = "cardrunner.setState"
DEBUG_MODULES = "cardrunner.debug.modules"
"""Which heavy modules were imported when (tests of the lazy start use it)."""
DEBUG_INDEX = "cardrunner.debug.index"
"""What the card index has read and parsed so far (tests of big boards count parses with it)."""

COMMANDS = (
    RUN,
    RESUME,
    CANCEL,
    ACCEPT,
    REJECT,
    SHOW_DIFF,
    SHOW_LOG,
    TOGGLE_HUNK,
    SET_STATE,
    DEBUG_MODULES,
    DEBUG_INDEX,
)
"""Every command, in the capabilities' order. The features carry them out
(features/commands.py), except `DEBUG_MODULES`: the server answers it itself (server.py)."""

BOARD = "cardrunner/board"
"""Custom request: every card with its column, state and actions (features/board.py)."""
RUN_SUMMARY = "cardrunner/runSummary"
"""Custom request: the card's current or last run, told as `cardrunner log` tells it."""

RUN_STATUS = "cardrunner/runStatus"
"""Notification: every run this server knows, each time one changes (features/status.py)."""
REVIEW_REQUESTED = "cardrunner/reviewRequested"
"""Notification: a run waits for review, with its files' before/after copies (features/review.py)."""
PROGRESS_TOKEN_PREFIX = "cardrunner/run/"
"""A run's `$/progress` token is this and its run id (features/progress.py)."""

CLIENT_OPTIONS = "client"
"""The one key of initializationOptions that is not a setting: what the client itself can do."""
WANTS_NOTIFICATIONS = "notifications"
"""`client` option: send the `cardrunner/*` notifications (true)."""
NATIVE_REVIEW = "nativeReview"
"""`client` option: the client shows reviews itself (true); no generic review UI for it."""
