"""One run per card, across processes: a lock file `.cardrunner/locks/<card identity>.lock`.

Two runs of one card (a CLI and the editor, two terminals) would write the same files, move the
same card and restore each other's work. So a run holds an exclusive `flock` on the card's lock
file for its whole life. The kernel drops the lock when the owner dies, so a crashed or killed
owner never leaves the card locked: the next run simply takes the lock over. The file records
who holds it (pid, the process's start time, the run id, since when) so a refusal can say which
run to wait for or cancel, and a record whose process is gone is recognised as stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cardrunner.card.card import card_key, card_slug
from cardrunner.config.paths import StatePaths


class CardBusy(Exception):
    """Another live run holds the card; str() names it."""


def process_start(pid: int) -> str | None:
    """The start time of `pid` in clock ticks since boot (Linux), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _owner_alive(owner: dict[str, object]) -> bool:
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = process_start(pid)
    return started is None or started == owner.get("pid_start")


@dataclass
class CardLock:
    """An exclusive hold on one card; `release` (or the owner's death) lets the next run in."""

    path: Path
    fd: int
    card: str

    @classmethod
    def acquire(cls, root: Path, card_path: Path, run_id: str | None = None) -> CardLock:
        """Hold the card or raise `CardBusy` naming the run that does.

        The lock is the card's identity (`card_slug`), from whatever path names it: the editor's
        absolute path, the CLI's relative one and CI's all take the same lock."""
        card = card_key(card_path, root)
        path = StatePaths(root).ensure().lock(card_slug(card_path, root))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read(fd)
            os.close(fd)
            raise CardBusy(_busy_message(card, owner)) from None
        lock = cls(path, fd, card)
        lock.record(run_id)
        return lock

    def record(self, run_id: str | None) -> None:
        """Write who holds the lock (the run id once it is known)."""
        owner = {
            "pid": os.getpid(),
            "pid_start": process_start(os.getpid()),
            "run_id": run_id,
            "card": self.card,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        data = json.dumps(owner).encode("utf-8")
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def release(self) -> None:
        """Let the next run in; safe to call twice."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)  # no stale owner for the next reader
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = -1


def _read(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _busy_message(card: str, owner: dict[str, object]) -> str:
    run = f"run {owner['run_id']}" if owner.get("run_id") else "a run"
    who = f"process {owner['pid']}" if owner.get("pid") else "another process"
    since = f" since {owner['since']}" if owner.get("since") else ""
    state = "" if not owner or _owner_alive(owner) else " (its record looks stale)"
    return (
        f"{card} is already running: {run} in {who}{since}{state}. One run per card: wait for "
        "it to end or cancel it there, then run the card again."
    )
