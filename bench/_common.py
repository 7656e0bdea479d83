"""What every benchmark needs: the repo on `sys.path`, the machine it ran on, small statistics.

The benchmarks run as `.venv/bin/python bench/<name>.py` from a fresh clone, so the repository
root (for `tests.e2e.project`) is put on `sys.path` here. Every script measures its baseline in
the same run, side by side, and prints ratios — absolute times on a shared 2-core machine mean
little, ratios measured together mean something.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VENV_BIN = Path(sys.executable).parent


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (all its threads, not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> str:
    """One line: date, CPUs, memory, Python, load average — recorded with each figure."""
    try:
        mem = subprocess.run(["free", "-h"], capture_output=True, text=True, check=True).stdout
        total = mem.splitlines()[1].split()[1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        total = "?"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{now} · nproc {os.cpu_count()} · mem {total} · Python {platform.python_version()}"
        f" · {platform.system()} {platform.release()} · load {load}"
    )


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100), nearest-rank on the sorted values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ratio: float, target: float) -> str:
    return "target met" if ratio <= target else "TARGET MISSED"


def header(title: str) -> None:
    print(f"== {title}")
    print(f"   {machine()}")
