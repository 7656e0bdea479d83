"""Where cardrunner keeps its own state in a workspace: everything under `.cardrunner/`.

Run logs, live markers, a run's working folder, the process ledgers and the worktrees of
isolated runs all live there. Building these paths in one place keeps every reader and writer
(the runner, the sweep, `check`, the editor's review files) agreeing on them, and keeps the
folder out of git: it ignores itself the first time it is made.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".cardrunner"
"""The state folder's name; no tool may read or write inside it (tools/files.py)."""


@dataclass(frozen=True)
class StatePaths:
    """The `.cardrunner/` paths of one workspace `root`. Building a path touches nothing."""

    root: Path

    @property
    def state(self) -> Path:
        """The state folder itself."""
        return self.root / STATE_DIR

    @property
    def runs(self) -> Path:
        """Run logs (`<id>.jsonl`), live markers (`<id>.pid`), run folders (`<id>/`)."""
        return self.state / "runs"

    def log(self, run_id: str) -> Path:
        """The JSONL log of one run (DESIGN.md: the run log)."""
        return self.runs / f"{run_id}.jsonl"

    def live_marker(self, run_id: str) -> Path:
        """Present while the run's process lives (run/liveness.py)."""
        return self.runs / f"{run_id}.pid"

    def run_dir(self, run_id: str) -> Path:
        """A run's own folder: screenshots, MCP scratch files, the editor's review copies."""
        return self.runs / run_id

    @property
    def processes(self) -> Path:
        """One ledger per cardrunner process of the process groups it started (run/sweep.py)."""
        return self.state / "processes"

    def agent_session(self, session_id: str) -> Path:
        """Which card an Agent Client Protocol session runs (`session/load` reads it back)."""
        return self.state / "acp-sessions" / f"{session_id}.json"

    def worktree(self, run_id: str) -> Path:
        """The git worktree the isolated run `run_id` works in: one per run, never shared by
        two cards or two runs of one card (only a resume of that run comes back to it)."""
        return self.state / "worktrees" / run_id

    def lock(self, card_slug: str) -> Path:
        """The lock file of the card whose identity is `card_slug` (run/cardlock.py)."""
        return self.state / "locks" / f"{card_slug}.lock"

    def ensure(self) -> StatePaths:
        """Make the state folder (ignoring itself, so git never sees it) and return self."""
        ignore = self.state / ".gitignore"
        if not ignore.exists():
            with contextlib.suppress(OSError):
                self.state.mkdir(parents=True, exist_ok=True)
                ignore.write_text("*\n", encoding="utf-8")
        return self
