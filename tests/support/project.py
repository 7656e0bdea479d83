"""A tiny real project in a temporary git repository, and transcripts that fix its card.

Shared by the CLI, fault and resume tests: the tools are real (files, compileall, pytest, git),
only the model's answers are scripted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cardrunner.card.card import card_slug

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

CARD = """---
title: Adding two numbers subtracts them
state: New
category: Bug
---
`add(2, 3)` returns -1.

**Acceptance criteria**

- `add(2, 3)` returns 5.
- The tests pass.
"""

TOML = """model = "claude-sonnet-5-5"

[paths]
read = ["."]
write = ["src"]

[commands]
build = ["python", "-m", "compileall", "-q", "src"]
test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
timeout_seconds = {timeout}

[limits]
max_rounds = 30
"""


def slug_of(card: str) -> str:
    """The identity (`card_slug`) of the card at the workspace-relative path `card`."""
    return card_slug(Path(card), Path("/"))


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def init_repo(root: Path, message: str = "initial") -> None:
    """Make `root` a git repository on `main` whose one commit holds everything in it."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def make_project(
    root: Path, *, timeout: float = 120, extra_toml: str = "", top_toml: str = ""
) -> Path:
    """Create the project and commit it; returns the card's path."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "cards").mkdir()
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / "cards" / "fix-add.md").write_text(CARD)
    (root / "cardrunner.toml").write_text(top_toml + TOML.format(timeout=timeout) + extra_toml)
    (root / ".gitignore").write_text("__pycache__/\n")
    init_repo(root)
    return root / "cards" / "fix-add.md"


def use(name: str, _id: str | None = None, **args: Any) -> dict[str, Any]:
    """A tool call; `_id` fixes its tool_use id so evidence can cite it."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": args}
    if _id:
        block["id"] = _id
    return block


def report(number: int, evidence: str, *cites: tuple[str, str], passed: bool = True) -> Any:
    """`report_criterion` on the card's criterion `number` (from 1) citing (call id, quote)s."""
    return use(
        "report_criterion",
        index=number,
        passed=passed,
        evidence=evidence,
        cites=[{"call": call, "quote": quote} for call, quote in cites],
    )


def turn(*blocks: dict[str, Any], think: str | None = None) -> dict[str, Any]:
    """A round that calls `blocks`; `think` adds a thinking block first ("" an empty one, as
    the 5.x models send under the default display)."""
    content = list(blocks)
    if think is not None:
        content.insert(0, {"type": "thinking", "thinking": think})
    return {"content": content, "stop_reason": "tool_use"}


def final(text: str = "Fixed and verified.\nRESULT: done") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def fix_transcript(commit_attempts: int = 1) -> list[dict[str, Any]]:
    """List, read, write the fix, build, test, report both criteria, commit, done."""
    steps = [
        turn(use("list_files", path="src"), think="Look at the code first."),
        turn(use("read_file", path="src/calc.py")),
        turn(use("write_file", path="src/calc.py", content=FIXED)),
        turn(use("build_app", "toolu_build"), use("run_tests", "toolu_tests")),
        turn(
            report(1, "add(2, 3) is 5 in the test", ("toolu_tests", "1 passed")),
            report(2, "1 passed", ("toolu_tests", "Tests succeeded.")),
        ),
    ]
    for i in range(commit_attempts):
        steps.append(
            turn(
                use(
                    "git_commit",
                    message=f"card: Adding two numbers subtracts them\n\nUse + (attempt {i + 1}).",
                )
            )
        )
    steps.append(final())
    return steps


def write_transcript(path: Path, steps: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"responses": steps}, indent=1))
    return path


def cli(
    root: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """Run `cardrunner` as a real subprocess in `root`."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cardrunner", *args],
        cwd=root,
        env=full,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def log_records(root: Path) -> list[dict[str, Any]]:
    logs = sorted((root / ".cardrunner" / "runs").glob("*.jsonl"))
    assert logs, "no run log written"
    return [json.loads(line) for line in logs[-1].read_text().splitlines()]


def slow_argv(marker: str, seconds: int) -> list[str]:
    """A test command that sleeps when the model runs it, and passes at once for the runner.

    The runner builds and tests at the run's start and before every review (it sets
    `CARDRUNNER_CHECK` for those); only the model's `run_tests` should sit in the sleep. The
    sleeping process carries `marker` on its command line so a /proc scan finds it; the
    launcher holds the marker reversed, so the runner's quick checks never match the scan.
    """
    code = (
        "import os, sys; os.environ.get('CARDRUNNER_CHECK') or os.execv(sys.executable, "
        f"[sys.executable, '-c', 'import time; time.sleep({seconds})', '{marker[::-1]}'[::-1]])"
    )
    return ["python", "-c", code]


def slow_tests(root: Path, marker: str) -> Path:
    """Make `run_tests` sleep for two minutes (its command line carries `marker`) and commit
    that; returns a transcript that calls it once and then gives up."""
    toml = root / "cardrunner.toml"
    toml.write_text(
        toml.read_text().replace(
            'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]',
            f"test = {json.dumps(slow_argv(marker, 120))}",
        )
    )
    git(root, "commit", "-qam", "slow tests")
    steps = [turn(use("run_tests")), final("RESULT: failed: slow")]
    return write_transcript(root.parent / f"{root.name}-slow.json", steps)


def start_cli(root: Path, *args: str) -> subprocess.Popen[str]:
    """`cardrunner` as a background process (for tests that signal or kill it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "cardrunner", *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
