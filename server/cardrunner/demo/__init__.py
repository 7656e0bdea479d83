"""The demo: InvoiceApp, a Textual invoice editor with three deliberate gaps, and a card for each.

`workspace/` is the template of the demo repository (the app in `invoice/`, its tests, the cards,
`cardrunner.toml` wiring the UI automation MCP server). `create_workspace` copies it into a fresh
git repository with one commit, so every run starts from the three gaps and its diff is exactly
what the model changed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cardrunner.config.paths import STATE_DIR
from cardrunner.git.safety import safe_argv, safe_env

WORKSPACE = Path(__file__).parent / "workspace"
"""The template folder; it becomes the root of the demo repository."""

CARDS = (
    "cards/total-ignores-the-discount.md",
    "cards/delete-asks-for-confirmation.md",
    "cards/validate-quantity-and-price.md",
)
"""The demo's cards, in the order the demo runs them."""

APP = "invoice.app:InvoiceApp"
"""The app as the UI server's `--app` argument."""

GITIGNORE = f"__pycache__/\n*.pyc\n.pytest_cache/\n{STATE_DIR}/\n"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", STATE_DIR)
_GIT_IDENTITY = ["-c", "user.name=cardrunner demo", "-c", "user.email=demo@cardrunner.invalid"]


class DemoError(Exception):
    """The demo repository could not be created; the message says why."""


def create_workspace(dest: Path, *, commit: bool = True) -> Path:
    """Copy the template into `dest` (new or empty), `git init` it and commit the three gaps.

    Returns `dest`. The `.gitignore` is written even when packaging dropped the dotfile.
    """
    dest = dest.resolve()
    if dest.exists() and any(dest.iterdir()):
        raise DemoError(f"{dest} exists and is not empty; choose a new folder")
    shutil.copytree(WORKSPACE, dest, ignore=_SKIP, dirs_exist_ok=True)
    gitignore = dest / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE, encoding="utf-8")
    if commit:
        _git(dest, "init", "-q", "-b", "main")
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "-m", "InvoiceApp demo with three gaps")
    return dest


def reset_write_area(root: Path, paths: list[str]) -> None:
    """Put `paths` back exactly as committed: changed files restored, new files removed.

    Only for the demo's own repository, which the demo created: a user's checkout is never
    reset like this (the runner restores only what a run changed, from its recorded start).
    """
    _git(root, "checkout", "-q", "HEAD", "--", *paths)
    _git(root, "clean", "-fdq", "--", *paths)


def _git(cwd: Path, *args: str) -> None:
    try:
        subprocess.run(
            safe_argv(cwd, *_GIT_IDENTITY, *args),
            cwd=cwd,
            env=safe_env(),
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        raise DemoError("git is not installed (the demo needs a git repository)") from None
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or error.stdout or "").strip()
        raise DemoError(f"git {args[0]} failed in {cwd}: {detail}") from None
