"""The real Backlog.md CLI (npm `backlog.md`) for the tests that run its boards as cards.

`.ci/run` installs it once and says where with `CARDRUNNER_BACKLOG_BIN`; elsewhere the session
fixture installs it into a temporary prefix with npm (and the tests skip without npm).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

BACKLOG_VERSION = "1.52.0"
BIN_VARIABLE = "CARDRUNNER_BACKLOG_BIN"


def install_backlog(prefix: Path) -> Path | None:
    """The `backlog` executable: `$CARDRUNNER_BACKLOG_BIN`, else installed under `prefix`
    (None when there is no npm to install it with)."""
    given = os.environ.get(BIN_VARIABLE)
    if given:
        return Path(given)
    npm = shutil.which("npm")
    if npm is None:
        return None
    subprocess.run(
        [
            npm,
            "install",
            "--silent",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(prefix),
            f"backlog.md@{BACKLOG_VERSION}",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return prefix / "node_modules" / ".bin" / "backlog"


class BacklogCli:
    """`backlog` run in a project, with its own home (no user config leaks in or out)."""

    def __init__(self, executable: Path, root: Path) -> None:
        self.executable, self.root = executable, root
        self.home = root.parent / f"{root.name}-backlog-home"
        self.home.mkdir(exist_ok=True)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "BACKLOG_CWD"}
        env.update(HOME=str(self.home), NO_COLOR="1", CI="1")
        done = subprocess.run(
            [str(self.executable), *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"backlog {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done

    def init(self, definition_of_done: list[str]) -> None:
        """`backlog init` without a question asked, then the project's Definition of Done."""
        self(
            "init",
            "demo",
            "--defaults",
            "--integration-mode",
            "none",
            "--check-branches",
            "false",
            "--include-remote",
            "false",
            "--auto-open-browser",
            "false",
        )
        config = self.root / "backlog" / "config.yml"
        items = ", ".join(f'"{item}"' for item in definition_of_done)
        config.write_text(config.read_text() + f"definition_of_done: [{items}]\n")

    def task(self, number: int) -> Path:
        [path] = (self.root / "backlog" / "tasks").glob(f"task-{number} - *.md")
        return path
