"""What the sandbox costs a command: the same commands with bubblewrap and without, interleaved.

Every build, test and app start goes through `bwrap` (a mount and a PID namespace per command).
Measured side by side on one machine: `python -c pass` (the fixed cost of a spawn) and a small
pytest run (what `run_tests` does), each N times unsandboxed and sandboxed in alternation, through
the real `run_command`. Target: a test run costs at most 1.2× its unsandboxed time.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine

from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.command import run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox

N = 15
GROUPS = ProcessGroups()
TEST = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n" for i in range(40))


def project(root: Path) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_sum.py").write_text(TEST)
    subprocess.run(["git", "init", "-q", str(root)], check=True)


async def timed(argv: list[str], root: Path, sandbox: Sandbox | None) -> float:
    started = time.perf_counter()
    result = await run_command(argv, root, 120, groups=GROUPS, sandbox=sandbox)
    assert result.ok, result.output
    return time.perf_counter() - started


async def main() -> int:
    print(machine())
    if not probe().ok:
        print(f"bubblewrap cannot run here: {probe().detail}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        project(root)
        box = Sandbox.start(
            "bwrap", root, ["tests"], root / ".cardrunner" / "r", read=[Path(sys.prefix)]
        )
        cases = {
            "spawn (python -c pass)": [sys.executable, "-c", "pass"],
            "pytest, 40 tests": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        }
        worst = 0.0
        for label, argv in cases.items():
            plain, boxed = [], []
            for _ in range(N):  # alternate, so load changes hit both sides alike
                plain.append(await timed(argv, root, None))
                boxed.append(await timed(argv, root, box))
            p, b = statistics.median(plain), statistics.median(boxed)
            print(f"{label}: unsandboxed median {p * 1000:.0f} ms, sandboxed {b * 1000:.0f} ms")
            print(f"RATIO {label}: sandboxed / unsandboxed = {b / p:.2f}×")
            if label.startswith("pytest"):
                worst = b / p
        met = "met" if worst <= 1.2 else "missed"
        print(f"RATIO target (a test run ≤ 1.2× unsandboxed): {worst:.2f}× — {met}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
