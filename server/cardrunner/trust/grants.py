"""The user's answers, kept where a repository cannot write them: `trusted.json` in the user's
cardrunner folder (config/settingsfiles.py), keyed by the repository's real path.

Each grant holds the fingerprint of the settings it was given for (trust/requests.py) and their
wording, so `cardrunner trust` can show what was granted and a changed config is asked again.
The file is written whole, atomically, readable by the user alone; a broken file trusts nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cardrunner.config.paths import outside, user_dir

TRUST_FILE = "trusted.json"


@dataclass(frozen=True)
class Grant:
    """The user trusted the repository `path` with the settings of `fingerprint`."""

    path: str
    fingerprint: str
    granted: str
    items: list[str]


def key(root: Path) -> str:
    """A repository's key: its real path (a symlink or `..` names the same repository)."""
    return os.path.realpath(root)


def _file(root: Path) -> Path | None:
    folder = user_dir()
    return folder / TRUST_FILE if outside(folder, root) else None


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lookup(root: Path) -> Grant | None:
    """The grant of the repository at `root`, or None."""
    path = _file(root)
    entry = _load(path).get(key(root)) if path is not None else None
    if not isinstance(entry, dict):
        return None
    with contextlib.suppress(KeyError, TypeError):
        return Grant(
            key(root), str(entry["fingerprint"]), str(entry["granted"]), list(entry["items"])
        )
    return None


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trusted-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def grant(root: Path, fingerprint: str, items: list[str]) -> Grant:
    """Remember that the user trusts `root` with these settings; raises OSError if it cannot."""
    path = _file(root)
    if path is None:
        raise OSError(f"the cardrunner config folder {user_dir()} lies inside {root}")
    data = _load(path)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    data[key(root)] = {"fingerprint": fingerprint, "granted": now, "items": items}
    _save(path, data)
    return Grant(key(root), fingerprint, now, items)


def revoke(root: Path) -> bool:
    """Forget the grant of `root`; False if there was none."""
    path = _file(root)
    if path is None:
        return False
    data = _load(path)
    if data.pop(key(root), None) is None:
        return False
    _save(path, data)
    return True
