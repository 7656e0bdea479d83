"""Keeping eight runs going in a `cardrunner lsp`, and waiting until they are truly over.

`editor_latency.py` samples the editor's requests only while every run plays rounds (past its
first: past the SDK's import and the first answer), and its quiet phases only once every
worker has exited and the spare has done its imports — a quiet phase measured while eight
workers wind down is not quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path
from typing import Any

from _lsp import LspProcess


def _round(message: str) -> int:
    """The round a progress report names (0: none)."""
    found = re.match(r"(?:awaiting review · )?round (\d+)", message)
    return int(found.group(1)) if found else 0


class Runs:
    """Keeps `cards` running: a run that ends is started again at once."""

    def __init__(self, server: LspProcess, cards: list[str]) -> None:
        self.server, self.cards = server, cards
        self.live: dict[Any, str] = {}  # progress token -> card
        self.going: set[Any] = set()  # tokens whose run has reported its second round
        self.seen = len(server.received)
        self.started = 0
        self._last_round: dict[Any, int] = {}  # progress token -> the newest round it reported

    def ended(self) -> list[str]:
        """Cards whose run ended since the last call (their progress `end` arrived)."""
        new = self.server.received[self.seen :]
        self.seen += len(new)
        out = []
        for r in new:
            token = r.params.get("token") if r.method == "$/progress" else None
            value = r.params.get("value", {}) if token in self.live else {}
            kind = value.get("kind")
            if kind == "report" and (n := _round(value.get("message", ""))):
                self._last_round[token] = max(n, self._last_round.get(token, 0))
                if n >= 2:  # past the SDK's import and the first answer: playing rounds
                    self.going.add(token)
            elif kind == "end":
                out.append(self.live.pop(token))
                self.going.discard(token)
        return out

    @property
    def rounds(self) -> int:
        """Rounds begun by all runs so far, as their progress told (how fast the runs go)."""
        return sum(self._last_round.values())

    @property
    def all_going(self) -> bool:
        return len(self.going) == len(self.cards)

    async def start(self, cards: list[str]) -> None:
        for card in cards:
            try:
                result = await self.server.request(
                    "workspace/executeCommand",
                    {"command": "cardrunner.runCard", "arguments": [card]},
                )
            except RuntimeError:  # refused (the last run is still winding down): next time
                self.seen = min(self.seen, len(self.server.received))
                continue
            self.live[result["token"]] = card
            self.started += 1

    async def top_up(self) -> None:
        self.ended()
        idle = [c for c in self.cards if c not in self.live.values()]
        await self.start(idle)

    async def stop(self) -> None:
        """Cancel what still runs and wait until every run has ended."""
        self.ended()
        for card in list(self.live.values()):
            with contextlib.suppress(RuntimeError):
                await self.server.request(
                    "workspace/executeCommand",
                    {"command": "cardrunner.cancelRun", "arguments": [card]},
                )
        deadline = time.perf_counter() + 120
        while self.live and time.perf_counter() < deadline:
            with contextlib.suppress(TimeoutError):
                await self.server.wait_for(lambda r: r.method == "$/progress", 5, self.seen)
            self.ended()


def _workers(server: int) -> set[int]:
    """Live run workers of the server `server` (its children running the worker program: on
    a shared machine other people's servers have workers too)."""
    found = set()
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"cardrunner.workers.program" not in argv or not proc.name.isdigit():
                continue
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent == server:
                found.add(int(proc.name))
    return found


async def quiet(server: LspProcess, seconds: float = 60.0) -> None:
    """Wait until the busy phase is over on the machine too: every run's worker has exited and
    the spare the server keeps for the next run has done its imports. An idle phase measured
    while eight workers wind down and a spare imports the SDK is not idle."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        info = await server.request(
            "workspace/executeCommand", {"command": "cardrunner.debug.modules", "arguments": []}
        )
        spare, workers = info.get("spare"), _workers(info["pid"])
        if (spare is None or spare["ready"]) and workers <= ({spare["pid"]} if spare else set()):
            return
        await asyncio.sleep(0.1)
    print("   (workers or the spare still busy after the busy phase; measuring idle anyway)")
