"""`cardrunner check`'s look at the commands and folders: what valid TOML still gets wrong.

Each of these passes the settings model and fails only later, in a run, with an exit status
that says little: a build program that is not installed, a whole shell line in one argument
(`["npm test && npm run lint"]`, which no shell ever reads), a write or read folder that does
not exist, a write area that lets the model change its own card or cardrunner's config, a
replay transcript that is not there. Checked here the way a run would see them: programs on
the run's PATH (cardrunner's interpreter first), folders relative to the workspace.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from cardrunner.config.settings import Settings
from cardrunner.run.assembly import command_env

_SHELL_RE = re.compile(r"&&|\|\||[|;<>`]|\$\(")
OWN_CONFIG = ("cardrunner.toml", ".mcp.json")


def _shell_line(arg: str) -> bool:
    """One argument that a shell would have split: spaces and an operator, or a program name
    with spaces in it."""
    return bool(re.search(r"\s", arg)) and bool(_SHELL_RE.search(arg))


def _argv_problems(name: str, argv: list[str], root: Path, path: str) -> list[str]:
    shown = " ".join(argv)
    if not argv:
        return [f"commands.{name}: empty; remove it or give the program and its arguments"]
    if any(_shell_line(arg) for arg in argv) or re.search(r"\s", argv[0]):
        return [
            f"commands.{name}: {argv!r} is a shell line in one argument; commands run "
            "without a shell, so give one argument per word, e.g. "
            f"{shown.split('&&')[0].split()!r} (for several commands, a script in the "
            "repository)"
        ]
    program = argv[0]
    if "/" in program:
        found = (root / program).is_file() and os.access(root / program, os.X_OK)
    else:
        found = shutil.which(program, path=path) is not None
    if found:
        return []
    return [
        f"commands.{name}: the program {program!r} is not found"
        + (" in the repository" if "/" in program else " on the run's PATH")
        + "; install it, or name it by its path"
    ]


def _inside(folder: str, other: str) -> bool:
    """Whether root-relative `other` lies inside root-relative `folder` (or is it)."""
    a, b = Path(os.path.normpath(folder)), Path(os.path.normpath(other))
    return a == Path(".") or b == a or b.is_relative_to(a)


def command_problems(root: Path, settings: Settings) -> list[str]:
    """Programs that do not exist and shell lines, for build, test and app."""
    path = command_env(root)["PATH"]
    out: list[str] = []
    commands = settings.commands
    for name, argv in (("build", commands.build), ("test", commands.test), ("app", commands.app)):
        if argv is not None:
            out += _argv_problems(name, argv, root, path)
    return out


def folder_problems(root: Path, settings: Settings) -> list[str]:
    """Folders that do not exist; a write area holding the cards or cardrunner's config."""
    out = [
        f"paths.{kind}: the folder {folder!r} does not exist; create it or remove it"
        for kind, folders in (("write", settings.paths.write), ("read", settings.paths.read))
        for folder in folders
        if (root / folder).resolve().is_relative_to(root.resolve()) and not (root / folder).is_dir()
    ]
    for folder in settings.paths.write:
        held = [settings.cards + "/"] if _inside(folder, settings.cards) else []
        held += [name for name in OWN_CONFIG if _inside(folder, name)]
        if held:
            out.append(
                f"paths.write: {folder!r} lets the model change {' and '.join(held)}; a run "
                "must not edit its own card or cardrunner's settings: list the source folders "
                'instead (e.g. write = ["src", "tests"])'
            )
    if settings.replay and not (root / settings.replay).exists():
        out.append(
            f"replay: {settings.replay!r} does not exist; write the transcript there "
            "(docs/transcripts.md) or remove `replay`"
        )
    return out
