"""The ids of the server's `workspace/executeCommand` commands and custom requests.

Lenses and code actions offer them, the review's diff document links to them, and the handlers
register one for each (before `initialize` is answered, from this table alone: the commands are
part of the capabilities); they are part of the LSP surface other editors rely on
(docs/lsp-extensions.md), so each is spelled here once.
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

CARD_COMMANDS = (RUN, CANCEL, RESUME, ACCEPT, REJECT, SHOW_DIFF, SHOW_LOG)
"""The commands a card offers as lenses and code actions."""

BOARD = "cardrunner/board"
"""Custom request: every card with its column, state and actions (features/board.py)."""
RUN_SUMMARY = "cardrunner/runSummary"
"""Custom request: the card's current or last run, told as `cardrunner log` tells it."""
