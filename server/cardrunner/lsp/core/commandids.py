"""The ids of the server's `workspace/executeCommand` commands: one table for every feature.

Lenses and code actions offer them, the review's diff document links to them, and the command
feature registers a handler for each; they are part of the LSP surface other editors rely on
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

CARD_COMMANDS = (RUN, CANCEL, RESUME, ACCEPT, REJECT, SHOW_DIFF, SHOW_LOG)
"""The commands a card offers as lenses and code actions."""
