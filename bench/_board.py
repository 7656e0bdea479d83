"""A workspace for the editor benchmarks: a git repository with a board of cards.

The runs it allows are replays (`replay = "transcripts"`: the scripted model plays
`transcripts/<card>.json`) with instant tools (`list_files`, `read_file`), so what loads the
language server is the loop, its events and their views — not compilers or tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

TOML = """cards = "cards"
{replay}{priority}require_evidence = false

[paths]
read = ["."]
write = ["src"]

[limits]
max_rounds = {max_rounds}
max_tokens = 0
"""

CARD = """---
title: {title}
state: New
category: Improvement
---
Card {n} of the benchmark board. The greeting should name the user.

**Acceptance criteria**

- The greeting says hello.
- The greeting names the user.
"""


def card_text(n: int, title: str | None = None, state: str = "New") -> str:
    return CARD.format(title=title or f"Benchmark card {n}", n=n).replace(
        "state: New", f"state: {state}"
    )


def instant_transcript(rounds: int, build: bool = False) -> dict[str, Any]:
    """`rounds` rounds of instant tools (arguments vary: no stall), each with a `build_app`
    when `build`, then a RESULT line."""
    paths = ["src/greet.py", "src", "cards", "README.md"]
    steps: list[dict[str, Any]] = []
    for i in range(rounds):
        path = paths[i % len(paths)]
        tool = "read_file" if path.endswith((".py", ".md")) else "list_files"
        then = ", then building" if build else ""
        content = [
            {"type": "text", "text": f"Round {i}: looking at {path}{then}."},
            {"type": "tool_use", "name": tool, "input": {"path": path}},
        ]
        if build:
            content.append({"type": "tool_use", "name": "build_app", "input": {}})
        steps.append({"content": content, "stop_reason": "tool_use"})
    steps.append(
        {"content": [{"type": "text", "text": "Looked.\nRESULT: done"}], "stop_reason": "end_turn"}
    )
    return {"responses": steps}


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )


def make_board(
    root: Path,
    cards: int,
    *,
    runnable: int = 0,
    rounds: int = 200,
    max_rounds: int = 1000,
    replay: bool = True,
    run_priority: str | None = None,
) -> list[Path]:
    """`cards` cards (`cards/card-0000.md` …); the first `runnable` get a transcript each.
    `replay=False` leaves the setting out: runs then call the Messages API (`ANTHROPIC_*`);
    `run_priority` sets how far the runs' workers yield the CPU (default: the setting's)."""
    (root / "src").mkdir(parents=True)
    (root / "cards").mkdir()
    (root / "transcripts").mkdir()
    (root / "src" / "greet.py").write_text('def greet(name):\n    return "Hello"\n')
    (root / "README.md").write_text("# Benchmark board\n")
    (root / ".gitignore").write_text("__pycache__/\n.cardrunner/\n")
    replay_line = 'replay = "transcripts"\n' if replay else ""
    priority = f"run_priority = {json.dumps(run_priority)}\n" if run_priority else ""
    toml = TOML.format(replay=replay_line, priority=priority, max_rounds=max_rounds)
    (root / "cardrunner.toml").write_text(toml)
    paths = []
    transcript = json.dumps(instant_transcript(rounds))
    for n in range(cards):
        path = root / "cards" / f"card-{n:04d}.md"
        path.write_text(card_text(n))
        if n < runnable:
            (root / "transcripts" / f"{path.stem}.json").write_text(transcript)
        paths.append(path.resolve())
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "benchmark board")
    return paths
