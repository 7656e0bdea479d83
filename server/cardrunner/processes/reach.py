"""Absolute paths in the interpreter's environment that lead into the user's checkout.

An isolated run works in a worktree, but `pip install -e .` wrote the checkout's absolute path
into a `.pth` file (or an `__editable__` finder) of the virtualenv. Tests run in the worktree
then import the checkout's package, and a change that breaks them ends Done. Under bubblewrap
the worktree is mounted at the checkout's path, so those paths lead to the worktree; without the
sandbox nothing can redirect them, and the run is refused with the file that names the path.
"""

from __future__ import annotations

import site
import sys
from collections.abc import Iterable
from pathlib import Path

_FILES = ("*.pth", "__editable__*.py", "__editable___*_finder.py")


def site_folders(prefixes: Iterable[Path]) -> list[Path]:
    """The site-packages folders of these interpreter prefixes (venv and base), existing ones."""
    found: dict[Path, None] = {}
    for prefix in prefixes:
        for folder in [*prefix.glob("lib/python*/site-packages"), prefix / "Lib/site-packages"]:
            if folder.is_dir():
                found[folder.resolve()] = None
    user = Path(site.getusersitepackages()) if site.ENABLE_USER_SITE else None
    if user is not None and user.is_dir():
        found[user.resolve()] = None
    return list(found)


def references(checkout: Path, inside: Path, folders: Iterable[Path]) -> list[tuple[Path, str]]:
    """(file, path) pairs: a `.pth`/editable finder in `folders` that names a path under
    `checkout` but not under `inside` (the run's worktree, which lies in the checkout)."""
    checkout, inside = checkout.resolve(), inside.resolve()
    hits: list[tuple[Path, str]] = []
    for folder in folders:
        for pattern in _FILES:
            for file in sorted(folder.glob(pattern)):
                hits += [(file, p) for p in _paths_in(file) if _leads_out(p, checkout, inside)]
    return hits


def _paths_in(file: Path) -> list[str]:
    """Absolute paths a `.pth` line or an editable finder's source names."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    words = text.replace('"', " ").replace("'", " ").replace(",", " ").split()
    return [w.rstrip(":;)]}") for w in words if w.startswith("/")]


def _leads_out(raw: str, checkout: Path, inside: Path) -> bool:
    path = Path(raw)
    return path.is_relative_to(checkout) and not path.is_relative_to(inside)


def interpreter_prefixes() -> list[Path]:
    """The prefixes of the interpreter the commands run with (`python` is ours on PATH)."""
    return list(dict.fromkeys(Path(p) for p in (sys.prefix, sys.base_prefix)))
