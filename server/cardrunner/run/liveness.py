"""Which runs are alive across processes, one run per card, and sweeping what a dead one left.

A run writes `.cardrunner/runs/<run-id>.pid` (its process id and card) while it goes and removes
it when it ends. A card left `In Work` whose run has no live process was interrupted: the process
died (a crash, SIGKILL, a closed editor). The CLI's `check` and the language server both ask here.

The same holds for a run log that has no `result` line and no live process, whatever the card
says (its state may never have reached the disk): `interrupted_runs` finds those. And when a run
is stopped because its editor went away, the stop carries an `interruption` message, so the
session records `interrupted` (the process-level stop, resumable) rather than the user's `cancelled`.

One run per card, across processes (`CardLock`): two runs of one card (a CLI and the editor, two
terminals) would write the same files, move the same card and restore each other's work. So a
run holds an exclusive `flock` on the card's lock file, `.cardrunner/locks/<card identity>.lock`,
for its whole life. The kernel drops the lock when the owner dies, so a crashed or killed owner
never leaves the card locked: the next run simply takes the lock over. The file records who
holds it (pid, the process's start time, the run id, since when) so a refusal can say which run
to wait for or cancel, and a record whose process is gone is recognised as stale.

Builds, tests, the app and MCP servers run in their own process groups, so they survive a
SIGKILL of the process that started them. Every cardrunner process therefore keeps a ledger,
`.cardrunner/processes/<pid>.jsonl`, of the groups it starts (`keep_ledger`; with each leader's
start time, so a recycled process id is never mistaken for ours, and the machine's boot id, so a
ledger from another machine or an earlier boot never matches a process here). A ledger git
tracks came with the repository's files and is never read (`own_files`). On start, the language
server and `cardrunner run` sweep the ledgers of owners that are gone (`sweep`): every recorded
group still alive is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cardrunner.card.card import card_key, card_slug
from cardrunner.config.paths import STATE_DIR, StatePaths
from cardrunner.git.safety import tracked
from cardrunner.processes.groups import ProcessGroups, boot_id, process_alive, start_time


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


def keep_ledger(root: Path, groups: ProcessGroups) -> Path:
    """Record every group `groups` notes from now on in this process's ledger under `root`."""
    path = StatePaths(root).processes / f"{os.getpid()}.jsonl"

    def record(pgid: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            entry = {"pgid": pgid, "start": start_time(pgid), "boot": boot_id()}
            f.write(json.dumps(entry) + "\n")

    groups.add_listener(record)
    return path


def sweep(root: Path) -> list[int]:
    """Kill the groups recorded by owners that no longer run; returns the groups killed."""
    folder = StatePaths(root).processes
    killed: list[int] = []
    if not folder.is_dir():
        return killed
    for ledger in own_files(root, folder.glob("*.jsonl")):
        owner = int(ledger.stem) if ledger.stem.isdigit() else 0
        if owner == os.getpid() or (owner and start_time(owner) is not None):
            continue
        for pgid in _ours(ledger):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        with contextlib.suppress(OSError):
            ledger.unlink()
    return killed


def _ours(ledger: Path) -> list[int]:
    """The groups of `ledger` that are still the very processes it recorded: same boot of this
    machine, same leader start time."""
    found: list[int] = []
    boot = boot_id()
    for line in ledger.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
            pgid, start = int(entry.get("pgid", 0)), entry.get("start")
        except (ValueError, TypeError, AttributeError):
            continue
        same_boot = boot is not None and entry.get("boot") == boot
        if pgid > 1 and same_boot and start is not None and start_time(pgid) == start:
            found.append(pgid)
    return found
