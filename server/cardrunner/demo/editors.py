"""After the demo: the same folder ready for an editor, with the cardrunner that ran the demo.

A newcomer installed cardrunner in a virtualenv that is not on PATH; an editor started from the
desktop finds no `cardrunner` and its server never starts. So the folder gets the settings that
name this interpreter's cardrunner (VS Code's `.vscode/settings.json`, machine-specific and so
kept out of git through `.git/info/exclude`; VS Code never runs a program a workspace names on
its own, so the extension asks once, naming it, and keeps the yes in the user's settings), the
Neovim line to paste is printed with the same
path, and one card is put back to New with the transcripts configured as `replay`, so the first
click on "▶ Run card" runs without an API key.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cardrunner.demo import DemoError
from cardrunner.trust.consent import question
from cardrunner.trust.grants import grant

DEMO_IDENTITY = ["-c", "user.name=cardrunner demo", "-c", "user.email=demo@cardrunner.invalid"]


def this_cardrunner() -> list[str]:
    """The argv that starts the cardrunner running now: a bare `cardrunner` only when PATH
    leads to this very one, else its script by full path, else this interpreter's `-m`."""
    script = Path(sys.executable).parent / "cardrunner"
    on_path = shutil.which("cardrunner")
    if script.is_file():
        same = on_path is not None and os.path.samefile(on_path, script)
        return ["cardrunner"] if same else [str(script)]
    return [sys.executable, "-m", "cardrunner"]


def shell_words(argv: list[str]) -> str:
    """`argv` as one would type it (paths with spaces quoted)."""
    return " ".join(json.dumps(a) if " " in a else a for a in argv)


def write_vscode_settings(root: Path) -> Path:
    """`.vscode/settings.json` whose `cardrunner.server.command` starts this cardrunner."""
    folder = root / ".vscode"
    folder.mkdir(exist_ok=True)
    settings = folder / "settings.json"
    command = [*this_cardrunner(), "lsp"]
    settings.write_text(json.dumps({"cardrunner.server.command": command}, indent=2) + "\n")
    exclude = root / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as out:
        out.write(".vscode/\n")  # names this machine's interpreter: not for a commit
    return settings


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *DEMO_IDENTITY, *args], cwd=root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise DemoError(f"git {' '.join(args)} failed in {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def head(root: Path) -> str:
    """The demo repository's current commit."""
    return _git(root, "rev-parse", "HEAD")


def leave_card_new(root: Path, before: str, transcripts: Path) -> None:
    """Undo the commits since `before` (one card's run: its fix, its state) and commit
    `replay = transcripts` in cardrunner.toml, so that card can be run again from the editor."""
    _git(root, "revert", "--no-edit", f"{before}..HEAD")
    toml = root / "cardrunner.toml"
    toml.write_text(f"replay = {json.dumps(str(transcripts))}\n" + toml.read_text())
    _git(root, "commit", "-qam", "demo: play the transcripts for runs started here")
    trust_the_demo(root)


def trust_the_demo(root: Path) -> None:
    """Remember that the user trusts this folder as it now is: the demo made it, from
    cardrunner's own files, so the editor's first click runs it without a question."""
    asked = question(root)
    if asked is not None:
        with contextlib.suppress(OSError):  # no user folder to write to: the editor will ask
            grant(root, asked.fingerprint, asked.items)


def editor_steps(root: Path, card: str, settings: Path) -> str:
    """How to open `root` in VS Code or Neovim with this cardrunner, exactly."""
    lsp = ", ".join(json.dumps(a) for a in [*this_cardrunner(), "lsp"])
    return f"""Open it in an editor ({card} is New again, and runs without a key):
  VS Code: install the extension (client-vscode/), then `code {root}`;
           it asks once whether to start {shell_words([*this_cardrunner(), "lsp"])}
           (named in {settings}): answer "Start it" (kept in your user settings),
           then open {card} and click "▶ Run card".
  Neovim 0.11+: put in init.lua (docs/editors.md has the lenses and keys), then `nvim {root / card}`:
    vim.lsp.config("cardrunner", {{ cmd = {{ {lsp} }}, filetypes = {{ "markdown", "diff" }},
                                   root_markers = {{ "cardrunner.toml", ".git" }} }})
    vim.lsp.enable("cardrunner")"""
