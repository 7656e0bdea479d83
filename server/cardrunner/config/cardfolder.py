"""Where a workspace's cards come from: its own `cards/` folder, or a Backlog.md project's tasks.

A repository that already keeps its work on a Backlog.md board (`backlog/config.yml`, the tasks in
`backlog/tasks/`) is run as it is: unless the settings name a `cards` folder, the board's tasks are
the cards, for the CLI, the language server's index and CI alike (card/backlog.py reads the board).
"""

from __future__ import annotations

from pathlib import Path

BACKLOG_CONFIG = "backlog/config.yml"
BACKLOG_TASKS = "backlog/tasks"


def default_cards(root: Path) -> str:
    """The cards folder a workspace has without a `cards` setting."""
    return BACKLOG_TASKS if (root / BACKLOG_CONFIG).is_file() else "cards"
