"""Which runs are alive right now, across processes.

A run writes `.cardrunner/runs/<run-id>.pid` (its process id and card) while it goes and removes
it when it ends. A card left `In Work` whose run has no live process was interrupted: the process
died (a crash, SIGKILL, a closed editor). The CLI's `check` and the language server both ask here.

The same holds for a run log that has no `result` line and no live process, whatever the card
says (its state may never have reached the disk): `interrupted_runs` finds those. And when a run
is stopped because its editor went away, the stop carries an `interruption` message, so the
session records `interrupted` (the process-level stop, resumable) rather than the user's `cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from cardrunner.config.paths import STATE_DIR, StatePaths
from cardrunner.git.safety import tracked
from cardrunner.processes.groups import process_alive


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
    for path in own_files(root, folder.glob("*.pid")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and process_alive(int(data.get("pid", 0))):
            out[str(data.get("card"))] = path.stem
    return out


def own_files(root: Path, paths: Iterable[Path]) -> list[Path]:
    """`paths` (under `root`'s state folder) without those git tracks.

    The state folder ignores itself, so a tracked log, live marker or ledger came with the
    repository's files (a clone, a zip): it is not cardrunner's and must not offer a Resume or
    steer the sweep."""
    candidates = list(paths)
    if not candidates:
        return []
    foreign = tracked(root, STATE_DIR)
    return [p for p in candidates if not foreign or p.resolve() not in foreign]


INTERRUPTION = "interrupted: "
"""Prefix of the cancel message that makes a stopped run `interrupted` instead of `cancelled`."""


def interruption(why: str) -> str:
    """The message to cancel a run's task with when its editor went away (`why`)."""
    return INTERRUPTION + why


def interrupted_by(exc: asyncio.CancelledError) -> str | None:
    """Why the run was interrupted, when the cancel said so; None for a plain cancel."""
    message = exc.args[0] if exc.args else None
    if isinstance(message, str) and message.startswith(INTERRUPTION):
        return message[len(INTERRUPTION) :]
    return None


_TAIL = 8192


def _first_and_last(path: Path) -> tuple[dict[str, object], dict[str, object]] | None:
    """The first line of a log and its last one, parsed; reads only the ends (a log can be
    long). A last line that does not parse — longer than the tail read, or torn by a crash
    mid-write — is no `result` (a result line is short and written whole): `{}`."""
    try:
        with path.open("rb") as file:
            first = json.loads(file.readline())
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - _TAIL))
            lines = [line for line in file.read().split(b"\n") if line.strip()]
    except (OSError, ValueError):
        return None
    try:
        last = json.loads(lines[-1]) if lines else first
    except ValueError:
        last = {}
    if not isinstance(first, dict) or not isinstance(last, dict):
        return None
    return first, last


def interrupted_runs(root: Path) -> dict[str, str]:
    """Card path (relative to root) → run id, for each card whose newest run log has no result
    and whose run has no live process: the server or its editor died while it ran."""
    folder = StatePaths(root).runs
    if not folder.is_dir():
        return {}
    live = set(live_cards(root).values())
    newest: dict[str, tuple[float, Path, dict[str, object]]] = {}
    for log in own_files(root, folder.glob("*.jsonl")):
        ends = _first_and_last(log)
        if ends is None or ends[0].get("type") != "start":
            continue
        data = ends[0].get("data")
        card = data.get("card") if isinstance(data, dict) else None
        with contextlib.suppress(OSError):
            mtime = log.stat().st_mtime
            if isinstance(card, str) and (card not in newest or newest[card][0] < mtime):
                newest[card] = (mtime, log, ends[1])
    return {
        card: log.stem
        for card, (_, log, last) in newest.items()
        if last.get("type") != "result" and log.stem not in live
    }
