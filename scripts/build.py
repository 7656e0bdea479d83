"""The "build" of cardrunner itself: ruff (lint and format check) and mypy, as CI runs them.

Python has no compile step, so the checks that catch broken code before the tests run are the
linters and the type checker. One argv list in cardrunner.toml cannot chain commands (no shell),
hence this script: it runs each check with the interpreter it was started with, prints every
problem, and exits non-zero if any check failed, naming which.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = (
    ("ruff check", ["-m", "ruff", "check", "--output-format", "concise", "."]),
    ("ruff format", ["-m", "ruff", "format", "--check", "."]),
    ("mypy", ["-m", "mypy"]),
)


def main() -> int:
    failed = []
    for name, args in CHECKS:
        proc = subprocess.run([sys.executable, *args], cwd=ROOT, check=False)
        if proc.returncode != 0:
            failed.append(name)
    if failed:
        print(f"build failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("build ok: ruff check, ruff format, mypy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
