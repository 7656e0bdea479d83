"""Does the editor stay responsive while cards run? codeLens (and hover) latency, busy vs idle.

One `cardrunner lsp` over stdio on a board of cards; one card is open in the "editor". Idle: its
`textDocument/codeLens` (and `textDocument/hover`, when the server offers it) are requested back
to back and timed at the client. Busy: the same, while eight other cards run at once — replayed
transcripts (the scripted model, `--model replay`, the default) or the SDK against a fake
Messages API in another process (`--model api`; it stands for a service on another machine, so
it runs at the workers' priority), with instant tools, 60 rounds a run (the default
`max_rounds`); a run that ends is started again at once, and requests are sent only while all
eight are playing rounds — past their first, so past the SDK's import and the first answer (a
busy phase stops after 60 s whatever the count). Phases alternate (idle, busy, idle, busy) and
the figures pool the phases.

    .venv/bin/python bench/editor_latency.py [--samples 600] [--cycles 2] [--model replay|api]
                                             [--run-priority low|lowest|idle] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from _board import make_board
from _common import VENV_BIN, header, median, percentile, verdict
from _lsp import LspProcess, Received, did_open, doc, position

from cardrunner.config.settings import RunPriority

TARGET = 1.5
RUNS = 8
API_NICENESS = 10
"""`--model api`: the fake Messages API's priority, the workers' own (`workers/program.py`)."""
BUSY_SECONDS = 60.0
"""A busy phase ends after this long even with fewer samples (the count says how many)."""


PROFILED_SERVER = """
import cProfile, os, sys
from cardrunner.cli.main import main
profile, real_exit = cProfile.Profile(), os._exit
def dump_and_exit(code):  # the server ends with os._exit, which skips cProfile's own dump
    profile.disable()
    profile.dump_stats(sys.argv[1])
    real_exit(code)
os._exit = dump_and_exit
profile.enable()
main(["lsp"])
"""
"""`cardrunner lsp` under cProfile (`--profile`); argv[1] is where the profile goes."""


def _hover_at(uri: str) -> dict[str, Any]:
    return position(uri, 1, 3)


PARAMS: dict[str, Callable[[str], dict[str, Any]]] = {
    "textDocument/codeLens": doc,
    "textDocument/hover": _hover_at,
}


async def sample(
    server: LspProcess, uri: str, methods: list[str], count: int
) -> dict[str, list[float]]:
    """Back-to-back requests, alternating methods, `count` each."""
    out: dict[str, list[float]] = {m: [] for m in methods}
    for _ in range(count):
        for method in methods:
            took, _ = await server.timed(method, PARAMS[method](uri))
            out[method].append(took)
    return out


def _playing(message: str) -> bool:
    """A run is playing rounds once its second round has begun: its worker has imported the
    SDK and had its first answer (the start-up burst is not what "cards running" means)."""
    found = re.match(r"(?:awaiting review · )?round (\d+)", message)
    return found is not None and int(found.group(1)) >= 2


class Runs:
    """Keeps `cards` running: a run that ends is started again at once."""

    def __init__(self, server: LspProcess, cards: list[str]) -> None:
        self.server, self.cards = server, cards
        self.live: dict[Any, str] = {}  # progress token -> card
        self.going: set[Any] = set()  # tokens whose run has reported a round
        self.seen = len(server.received)
        self.started = 0

    def ended(self) -> list[str]:
        """Cards whose run ended since the last call (their progress `end` arrived)."""
        new = self.server.received[self.seen :]
        self.seen += len(new)
        out = []
        for r in new:
            token = r.params.get("token") if r.method == "$/progress" else None
            value = r.params.get("value", {}) if token in self.live else {}
            kind = value.get("kind")
            if kind == "report" and _playing(value.get("message", "")):
                self.going.add(token)
            elif kind == "end":
                out.append(self.live.pop(token))
                self.going.discard(token)
        return out

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


async def busy_phase(
    server: LspProcess, uri: str, cards: list[str], methods: list[str], count: int
) -> tuple[dict[str, list[float]], int]:
    """Samples sent while all of `cards` run (at most `BUSY_SECONDS`); returns them and how many
    runs were started."""
    runs = Runs(server, cards)
    out: dict[str, list[float]] = {m: [] for m in methods}
    deadline = time.perf_counter() + BUSY_SECONDS
    while min(len(v) for v in out.values()) < count and time.perf_counter() < deadline:
        await runs.top_up()
        if not runs.all_going:  # wait for every run to be past its set-up, playing rounds
            with contextlib.suppress(TimeoutError):
                await server.wait_for(lambda r: r.method == "$/progress", 5, runs.seen)
            continue
        for method in methods:
            took, _ = await server.timed(method, PARAMS[method](uri))
            out[method].append(took)
    await runs.stop()
    await quiet(server)
    return out, runs.started


def _workers() -> set[int]:
    """Live run workers on this machine (ours: the bench's server is the only one running)."""
    found = set()
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"cardrunner.workers.program" in argv and proc.name.isdigit():
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
        spare = info.get("spare")
        if (spare is None or spare["ready"]) and _workers() <= ({spare["pid"]} if spare else set()):
            return
        await asyncio.sleep(0.1)
    print("   (workers or the spare still busy after the busy phase; measuring idle anyway)")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=600, help="per method and phase")
    parser.add_argument("--cycles", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=60, help="rounds of each run (max_rounds)")
    parser.add_argument(
        "--model",
        choices=["replay", "api"],
        default="replay",
        help="replay: the `replay` setting (scripted model, checks on the server's loop); api: "
        "the SDK against a fake Messages API in another process",
    )
    parser.add_argument(
        "--run-priority",
        choices=get_args(RunPriority),
        help="write `run_priority` into the board's cardrunner.toml (default: left unset)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="run the server under cProfile, print its hot spots"
    )
    args = parser.parse_args()
    priority = f", run_priority {args.run_priority}" if args.run_priority else ""
    header(
        f"editor latency: {RUNS} runs going vs idle, {args.cycles} cycles, model {args.model}"
        + priority
    )
    fake: asyncio.subprocess.Process | None = None
    env = dict(os.environ)
    if args.model == "api":
        fake, base_url = await start_fake_api(args.rounds)
        env |= {"ANTHROPIC_API_KEY": "sk-bench", "ANTHROPIC_BASE_URL": base_url}
    with tempfile.TemporaryDirectory(prefix="bench-editor-") as tmp:
        root = Path(tmp) / "board"
        cards = make_board(
            root,
            RUNS + 1,
            runnable=RUNS + 1,
            rounds=args.rounds,
            replay=args.model == "replay",
            run_priority=args.run_priority,
        )
        watched, runs = cards[-1].as_uri(), [c.as_uri() for c in cards[:RUNS]]
        argv = [str(VENV_BIN / "cardrunner"), "lsp"]
        profile = Path(tmp) / "server.prof"
        if args.profile:
            argv = [sys.executable, "-c", PROFILED_SERVER, str(profile)]
        server = LspProcess(argv, root, env)
        await server.spawn()
        try:
            init = await server.initialize(root)
            caps = init.get("capabilities", {})
            methods = ["textDocument/codeLens"]
            if caps.get("hoverProvider"):
                methods.append("textDocument/hover")
            server.notify("textDocument/didOpen", did_open(watched, cards[-1].read_text()))
            await server.wait_for(
                lambda r: (
                    r.method == "textDocument/publishDiagnostics" and r.params["uri"] == watched
                ),
                30,
            )
            if not await server.settled():
                print("   (the server never said its start-up had settled; measuring anyway)")
            await sample(server, watched, methods, 30)  # warm-up
            if "textDocument/hover" in methods:
                answer = await server.request(
                    "textDocument/hover", PARAMS["textDocument/hover"](watched)
                )
                print(f"   hover on the title line answers: {str(answer)[:100]}")
            idle: dict[str, list[float]] = {m: [] for m in methods}
            busy: dict[str, list[float]] = {m: [] for m in methods}
            started = time.perf_counter()
            run_count = 0
            for _ in range(args.cycles):
                for m, v in (await sample(server, watched, methods, args.samples)).items():
                    idle[m] += v
                got, started_runs = await busy_phase(server, watched, runs, methods, args.samples)
                run_count += started_runs
                for m, v in got.items():
                    busy[m] += v
            print(f"   measured in {time.perf_counter() - started:.0f} s; {run_count} runs started")
            sent = Counter(r.method for r in server.received)
            top = ", ".join(f"{m} {n:,}" for m, n in sent.most_common(6))
            print(f"   the server sent {sum(sent.values()):,} messages: {top}")
            warnings = [r for r in server.received if _is_error(r)]
            if warnings:
                print(
                    f"   server reported {len(warnings)} error message(s), first: "
                    f"{warnings[0].params.get('message', '')[:200]}"
                )
        finally:
            await server.close()
            if fake is not None:
                await stop_fake_api(fake)
        print(f"   runs: {run_summary(root)}")
        if args.profile:
            hot_spots(profile)
    ratios = {}
    for m in methods:
        i, b = idle[m], busy[m]
        ratios[m] = percentile(b, 99) / percentile(i, 99)
        print(
            f"   {m:<22} idle p50 {median(i) * 1000:6.2f} ms  p99 {percentile(i, 99) * 1000:6.2f}"
            f" ms (n={len(i)})   busy p50 {median(b) * 1000:6.2f} ms  p99 "
            f"{percentile(b, 99) * 1000:6.2f} ms (n={len(b)})"
        )
    if "textDocument/hover" not in methods:
        print("   textDocument/hover: not implemented by the server (no hoverProvider)")
    if max(ratios.values()) > TARGET and not args.profile:
        print(
            "   why: the runs execute in worker processes at a lower priority, but share the "
            "machine's cores with the server (and, with --model api, with the fake API's "
            "process); run with --profile to see where the server spends its time."
        )
    for m, ratio in ratios.items():
        print(
            f"RATIO {m} p99 busy/idle = {ratio:.2f}×  (target ≤ {TARGET}×): "
            f"{verdict(ratio, TARGET)}"
        )
    return 0


async def start_fake_api(rounds: int) -> tuple[asyncio.subprocess.Process, str]:
    fake = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name("_fake_api_server.py")),
        "--rounds",
        str(rounds),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,  # cancelled runs drop streams; violations are counted
    )
    assert fake.stdout is not None
    # it stands for a service on another machine: scheduled like the workers, so that what is
    # measured is the editor's machine running eight cards, not also hosting their API
    os.setpriority(os.PRIO_PROCESS, fake.pid, API_NICENESS)
    line = (await asyncio.wait_for(fake.stdout.readline(), 60)).decode()
    if not line.startswith("READY "):
        raise SystemExit(f"the fake Messages API did not start: {line!r}")
    return fake, line.split()[1]


async def stop_fake_api(fake: asyncio.subprocess.Process) -> None:
    assert fake.stdin is not None and fake.stdout is not None
    fake.stdin.close()
    rest = (await asyncio.wait_for(fake.stdout.read(), 30)).decode().strip()
    await fake.wait()
    print(f"   fake Messages API: {rest}")


def run_summary(root: Path) -> str:
    """What the run logs say: how many runs, how they ended, how many rounds."""
    import json

    ends: Counter[str] = Counter()
    rounds = []
    for log in sorted((root / ".cardrunner" / "runs").glob("*.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("type") == "result":
                data = record["data"]
                ends[f"{data['status']} {data.get('reason') or ''}".strip()] += 1
                rounds.append(data["rounds"])
    shown = ", ".join(f"{k} ×{v}" for k, v in ends.items()) or "none"
    return f"{sum(ends.values())} ended ({shown}), rounds median {median(rounds) if rounds else 0}"


def hot_spots(profile: Path) -> None:
    """Where the server spent its time (whole session, idle phases included)."""
    import io
    import pstats

    out = io.StringIO()
    pstats.Stats(str(profile), stream=out).sort_stats("tottime").print_stats(15)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print("   server profile, by own time:")
    for line in lines[start : start + 16]:
        print(f"     {line[:150]}")
    out = io.StringIO()
    pstats.Stats(str(profile), stream=out).sort_stats("cumulative").print_stats("cardrunner", 12)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    print("   server profile, cardrunner functions by cumulative time:")
    for line in lines[start : start + 13]:
        print(f"     {line[:150]}")


def _is_error(r: Received) -> bool:
    return r.method in ("window/showMessage", "window/logMessage") and r.params.get("type") == 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
