"""Does a long run make the editor work harder each round? Client CPU per round, 240 vs 10.

One `cardrunner lsp` on a workspace of one card per repetition, each with a replay transcript
of `--rounds` (default 250) rounds of an instant tool (`list_files`/`read_file`, the scripted
model) and a `build_app` that only sleeps `PACE` s (so rounds last about as the
server's coalescing, and each gets its own updates), run one after the other. The client acts
like VS Code with the card and its run view open: it decodes every message the server sends,
keeps the diagnostics per file, answers `window/workDoneProgress/create`, re-requests the
card's code lenses on every `workspace/codeLens/refresh`, re-requests the board (debounced
150 ms, as the Cards view does) and the open run view (`cardrunner/runSummary`) on every
`cardrunner/runStatus`, and hovers on the card's title once per round.

The round a moment belongs to is the newest round the server has told the client (progress
reports, run status). Per round it sums the client's CPU (`time.process_time()` of this
process: reading, decoding, handling, answering) and the bytes the server sent
(notifications, requests and the answers to the client's requests), by method. The rounds of
each window (5–15 and 235–245) of every run are pooled: min/median/max over them, and the ratio
is round 240's median over round 10's. The server process's own CPU per round is a window
average (its clock ticks are 10 ms).

    .venv/bin/python bench/client_cpu.py [--reps 2] [--rounds 250]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _board import git, instant_transcript, make_board
from _common import VENV_BIN, cpu_seconds, header, median, verdict
from _lsp import LspProcess, did_open, doc, position

TARGET = 2.0
EARLY = range(5, 16)
"""Rounds 5–15: the window around round 10."""
LATE = range(235, 246)
"""Rounds 235–245: the window around round 240."""
BOARD_DEBOUNCE = 0.15
"""VS Code's Cards view asks for the board at most this often (REFRESH_DEBOUNCE_MS)."""
PACE = 0.2
"""Seconds the build of every round sleeps."""
ROUND = re.compile(r"\bround (\d+)")


@dataclass
class Tally:
    """What one round cost the client."""

    cpu: float = 0.0
    bytes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    messages: int = 0


class Editor(LspProcess):
    """`LspProcess` that behaves like VS Code with a card and its run view open, and bills
    each message's bytes and the client's CPU to the round the client knows of."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.card = ""
        self.round = 0
        self.rounds: dict[int, Tally] = defaultdict(Tally)
        self.diagnostics: dict[str, list[Any]] = {}
        self.board: Any = None
        self.summary: list[str] = []
        self.server_cpu: dict[int, float] = {}
        """Round → the server process's CPU seconds when the client first heard of it."""
        self.hovered: set[int] = set()
        self._board_timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._cpu_mark = time.process_time()
        self._answers: dict[int, str] = {}

    def bill(self, method: str, size: int) -> None:
        """Bytes to the current round; CPU since the last bill too (the client's work between
        two messages is the handling of the first and the reading of the second)."""
        now = time.process_time()
        tally = self.rounds[self.round]
        tally.cpu += now - self._cpu_mark
        self._cpu_mark = now
        tally.bytes[method] += size
        tally.messages += 1

    def request_soon(self, method: str, params: Any) -> None:
        async def ask() -> None:
            with contextlib.suppress(TimeoutError, ConnectionError, RuntimeError):
                result = await self.request(method, params)
                self._keep(method, result)

        task = asyncio.create_task(ask())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _keep(self, method: str, result: Any) -> None:
        if method == "cardrunner/board":
            self.board = result
        elif method == "cardrunner/runSummary" and isinstance(result, dict):
            self.summary = str(result.get("text", "")).splitlines()  # a document's lines

    def _received(self, raw: bytes) -> None:
        message = json.loads(raw)
        method = message.get("method") or self._answers.get(message.get("id"), "?")
        self._dispatch(message, time.perf_counter())
        self._handle(message)
        self.bill(method if "method" in message else f"{method} (answer)", len(raw))

    async def request(self, method: str, params: Any, within: float = 60.0) -> Any:
        msg_id = next(self._ids)
        self._answers[msg_id] = method
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self._send({"id": msg_id, "method": method, "params": params})
        try:
            async with asyncio.timeout(within):
                return await future
        finally:
            self._answers.pop(msg_id, None)

    def _handle(self, message: dict[str, Any]) -> None:
        """What VS Code does with a message beyond answering it."""
        method, params = message.get("method"), message.get("params") or {}
        if method == "$/progress":
            text = str(params.get("value", {}).get("message", ""))
            self._saw_round(text)
        elif method == "cardrunner/runStatus":
            for run in params.get("runs", []):
                if run.get("uri") == self.card and run.get("state") in ("running", "review"):
                    self._at_round(int(run.get("round") or 0))
            self._board_soon()
            self.request_soon("cardrunner/runSummary", {"uri": self.card})
        elif method == "textDocument/publishDiagnostics":
            self.diagnostics[params["uri"]] = params["diagnostics"]
        elif method == "workspace/codeLens/refresh":
            self.request_soon("textDocument/codeLens", doc(self.card))
        if self.round not in self.hovered and self.card:
            self.hovered.add(self.round)
            self.request_soon("textDocument/hover", position(self.card, 1, 3))

    def _saw_round(self, text: str) -> None:
        found = ROUND.search(text)
        if found:
            self._at_round(int(found.group(1)))

    def _at_round(self, number: int) -> None:
        if number > self.round:
            self.round = number
            self.server_cpu[number] = self.server_seconds()

    def server_seconds(self) -> float:
        """utime + stime of the server process (not its workers), in seconds."""
        assert self.proc is not None
        return cpu_seconds(self.proc.pid)

    def _board_soon(self) -> None:
        if self._board_timer is None:
            self._board_timer = asyncio.get_running_loop().call_later(
                BOARD_DEBOUNCE, self._ask_board
            )

    def _ask_board(self) -> None:
        self._board_timer = None
        self.request_soon("cardrunner/board", {})

    def watch(self, card: str) -> None:
        """A new run of `card`: count its rounds from zero."""
        self.card, self.round = card, 0
        self.rounds = defaultdict(Tally)
        self.hovered = set()
        self.server_cpu = {}
        self._cpu_mark = time.process_time()


def paced_transcript(rounds: int) -> dict[str, Any]:
    """`rounds` rounds of an instant tool and a `build_app` that only sleeps, so every round
    lasts about `PACE` s, as a model's would, instead of milliseconds: the server coalesces
    what it sends over 0.1 s, so unpaced rounds would share messages."""
    return instant_transcript(rounds, build=True)


def make_workspace(root: Path, cards: int, rounds: int) -> list[Path]:
    """`_board.make_board`'s workspace, its transcripts paced and its build a sleep (unsandboxed:
    the measurement is the editor's, not bubblewrap's); committed, as settings must be."""
    paths = make_board(root, cards, runnable=cards, rounds=rounds, max_rounds=rounds + 10)
    toml = root / "cardrunner.toml"
    toml.write_text(
        toml.read_text().replace("[paths]", 'sandbox = "off"\n\n[paths]')
        + f'\n[commands]\nbuild = ["sleep", "{PACE}"]\n'
    )
    transcript = json.dumps(paced_transcript(rounds))
    for path in paths:
        (root / "transcripts" / f"{path.stem}.json").write_text(transcript)
    git(root, "commit", "-q", "-am", "paced rounds")
    return paths


def per_round(runs: list[Run], span: range) -> list[Tally]:
    """Every round of the window, of every run (a round nothing arrived in counts as zero)."""
    return [run.rounds.get(r, Tally()) for run in runs for r in span]


@dataclass
class Run:
    rounds: dict[int, Tally]
    server_cpu: dict[int, float]

    def server_ms(self, span: range) -> float:
        """The server's CPU per round over `span` (its clock ticks are 10 ms: a window, not a
        round, is the unit)."""
        return (self.server_cpu[span.stop] - self.server_cpu[span.start]) * 1000 / len(span)


async def one_run(editor: Editor, path: Path, text: str, within: float) -> Run:
    """Run the card to its end; what the client and the server spent, by round."""
    uri = path.as_uri()
    editor.notify("textDocument/didOpen", did_open(uri, text))
    editor.watch(uri)
    since = len(editor.received)
    result = await editor.request(
        "workspace/executeCommand", {"command": "cardrunner.runCard", "arguments": [uri]}
    )
    token = result.get("token")
    await editor.wait_for(
        lambda r: (
            r.method == "$/progress"
            and str(r.params.get("token", "")).startswith(str(token))
            and r.params.get("value", {}).get("kind") == "end"
        ),
        within,
        since,
    )
    while editor._tasks:  # the answers to what the end made the client ask
        await asyncio.wait(list(editor._tasks), timeout=10)
    editor.bill("(end)", 0)
    editor.notify("textDocument/didClose", doc(uri))
    return Run(editor.rounds, editor.server_cpu)


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"min {min(values):.{digits}f} / median {median(values):.{digits}f} / "
        f"max {max(values):.{digits}f} {unit}"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2, help="runs, one after the other")
    parser.add_argument("--rounds", type=int, default=250, help="rounds of each run (≥ 246)")
    args = parser.parse_args()
    if args.rounds < LATE.stop:
        raise SystemExit(f"--rounds must be at least {LATE.stop}")
    header(
        f"client CPU per round: rounds {EARLY.start}-{EARLY.stop - 1} vs "
        f"{LATE.start}-{LATE.stop - 1} of a {args.rounds}-round run, {args.reps} run(s)"
    )
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-clientcpu-") as tmp:
        root = Path(tmp) / "board"
        cards = make_workspace(root, args.reps, args.rounds)
        texts = {path: path.read_text() for path in cards}
        editor = Editor([str(VENV_BIN / "cardrunner"), "lsp"], root)
        await editor.spawn()
        started = time.perf_counter()
        try:
            await editor.initialize(root)
            if not await editor.settled():
                print("   (the server never said its start-up had settled; measuring anyway)")
            for path in cards:
                runs.append(await one_run(editor, path, texts[path], within=600))
        finally:
            await editor.close()
        took = time.perf_counter() - started
    reached = [max(r.rounds) for r in runs]
    print(f"   {len(runs)} run(s) measured in {took:.0f} s; rounds reached {reached}")
    if min(reached) < LATE.stop - 1:
        print(f"   a run ended before round {LATE.stop - 1}: the measurement is invalid")
        return 2
    early, late = per_round(runs, EARLY), per_round(runs, LATE)
    cpu = {w: [t.cpu * 1000 for t in ts] for w, ts in (("early", early), ("late", late))}
    size = {
        w: [sum(t.bytes.values()) / 1000 for t in ts]
        for w, ts in (("early", early), ("late", late))
    }
    for name, key, ts in (("round 10 ", "early", early), ("round 240", "late", late)):
        print(
            f"   {name}  client CPU {spread(cpu[key], 'ms', 3)}   "
            f"server sent {spread(size[key], 'kB', 1)}   "
            f"({median([float(t.messages) for t in ts]):.0f} messages) per round"
        )
    server = {
        w: [r.server_ms(span) for r in runs] for w, span in (("early", EARLY), ("late", LATE))
    }
    print(
        f"   server CPU per round (its own process, window average): round 10 "
        f"{spread(server['early'], 'ms', 1)}, round 240 {spread(server['late'], 'ms', 1)}"
    )
    ratio_cpu = median(cpu["late"]) / median(cpu["early"])
    ratio_bytes = median(size["late"]) / median(size["early"])
    methods = sorted({m for t in early + late for m in t.bytes})
    print("   bytes per round by method (mean over the window's rounds), round 10 → round 240:")
    for m in methods:
        a = sum(t.bytes.get(m, 0) for t in early) / len(early)
        b = sum(t.bytes.get(m, 0) for t in late) / len(late)
        grows = f"  ×{b / a:.1f}" if a and b / a > 1.5 else ""
        print(f"     {m:<40} {a:>10,.0f} → {b:>10,.0f}{grows}")
    if ratio_cpu > TARGET:
        print(
            "   why: what the server sends per round grows with the run "
            f"({ratio_bytes:.1f}× the bytes); the methods marked × above grow most."
        )
    ratio_server = median(server["late"]) / max(median(server["early"]), 1e-9)
    print(f"RATIO server bytes per round 240/10 = {ratio_bytes:.2f}×  (no target; the cause)")
    print(f"RATIO server CPU per round 240/10 = {ratio_server:.2f}×  (no target; 10 ms ticks)")
    print(
        f"RATIO client CPU per round 240/10 = {ratio_cpu:.2f}×  (target ≤ {TARGET:g}×): "
        f"{verdict(ratio_cpu, TARGET)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
