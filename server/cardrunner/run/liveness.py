"""Which runs are alive right now, across processes.

A run writes `.cardrunner/runs/<run-id>.pid` (its process id and card) while it goes and removes
it when it ends. A card left `In Work` whose run has no live process was interrupted: the process
died (a crash, SIGKILL, a closed editor). The CLI's `check` and the language server both ask here.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from cardrunner.config.paths import StatePaths


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie has exited; it only waits to be reaped
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def mark_live(root: Path, run_id: str, card: str) -> Path:
    path = StatePaths(root).ensure().live_marker(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": os.getpid(), "card": card}), encoding="utf-8")
    return path


def clear_live(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def live_cards(root: Path) -> dict[str, str]:
    """Card path (relative to root) → run id, for every run whose process is still alive."""
    out: dict[str, str] = {}
    folder = StatePaths(root).ensure().runs
    if not folder.is_dir():
        return out
    for path in folder.glob("*.pid"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and _alive(int(data.get("pid", 0))):
            out[str(data.get("card"))] = path.stem
    return out
