"""SIGKILL at a random round, ten times: the card shows as interrupted, `--resume` continues the
conversation from the log, and the final diff is the one an uninterrupted run makes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault
from tests.support.lsp import processes_with
from tests.support.project import FIXED, cli, fix_transcript, git, make_project

KILLS = 10


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def tool_lines(root: Path) -> int:
    logs = list((root / ".cardrunner/runs").glob("*.jsonl"))
    if not logs:
        return 0
    lines = logs[0].read_text().splitlines()
    return sum(1 for line in lines if line.endswith("}") and json.loads(line)["type"] == "tool")


def processes_under(path: Path) -> list[int]:
    """Live processes whose command line names `path` (the run's workspace)."""
    return processes_with(str(path))


def test_sigkill_then_resume_ends_with_the_uninterrupted_diff(tmp_path: Path) -> None:
    steps = fix_transcript()
    calls_per_round = [sum(b["type"] == "tool_use" for b in s["content"]) for s in steps]
    rng = random.Random(20261129)
    for attempt in range(KILLS):
        root = tmp_path / f"k{attempt}"
        card = make_project(root)
        start = git(root, "rev-parse", "HEAD").strip()
        kill_after = rng.randint(1, len(steps) - 1)  # rounds done when the process dies
        slow = [Fault.delay(0.3, then=s) for s in steps]
        with FakeMessagesAPI(slow) as api:
            env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test"}
            proc = subprocess.Popen(
                [sys.executable, "-m", "cardrunner", "run", "cards/fix-add.md", "--yes"],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            done_calls = sum(calls_per_round[:kill_after])
            wait_for(
                lambda r=root, n=done_calls, p=proc: tool_lines(r) >= n or p.poll() is not None,
                60,
                "rounds",
            )
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            assert not api.violations
        meta = yaml.safe_load(card.read_text().split("---")[1])
        assert meta["state"] == "In Work", "the card shows the run never ended"
        checked = cli(root, "check", "cards/fix-add.md")
        assert checked.returncode == 1 and "interrupted" in checked.stdout
        with FakeMessagesAPI(fresh_ids(steps[kill_after:]), check_history=False) as api:
            resumed = cli(
                root,
                "run",
                "cards/fix-add.md",
                "--resume",
                "--yes",
                env={"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test"},
            )
            assert resumed.returncode == 0, (attempt, kill_after, resumed.stderr)
            api.assert_complete()
            first = api.requests[0].body
        # the resumed conversation is the one that was sent, plus the resume note
        assert len(first["messages"]) == 2 * kill_after + 1
        assert "resumed" in json.dumps(first["messages"][-1])
        assert git(root, "diff", start, "HEAD", "--", "src") == git_diff_of_fix(root, start)
        assert (root / "src/calc.py").read_text() == FIXED
        assert yaml.safe_load(card.read_text().split("---")[1])["state"] == "Done"
        wait_for(lambda r=root: not processes_under(r), 15, "processes of the run to end")


def fresh_ids(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A second API server hands out its own ids; real ones never repeat across responses."""
    out, renamed = [], {}
    for i, step in enumerate(steps):
        content = []
        for j, b in enumerate(step["content"]):
            if b["type"] == "tool_use":
                new = f"toolu_resumed_{i}_{j}"
                renamed[b.get("id", new)] = new
                b = {**b, "id": new, "input": _cite_renamed(b["input"], renamed)}
            content.append(b)
        out.append({**step, "content": content})
    return out


def _cite_renamed(arguments: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """Evidence keeps citing the same calls under their new ids (calls from before the kill
    keep theirs)."""
    if "cites" not in arguments:
        return arguments
    cites = [{**c, "call": renamed.get(c["call"], c["call"])} for c in arguments["cites"]]
    return {**arguments, "cites": cites}


def git_diff_of_fix(root: Path, start: str) -> str:
    """The diff an uninterrupted run makes: calc.py fixed, nothing else."""
    return (
        "diff --git a/src/calc.py b/src/calc.py\n"
        f"index {git(root, 'rev-parse', '--short=7', f'{start}:src/calc.py').strip()}.."
        f"{git(root, 'rev-parse', '--short=7', 'HEAD:src/calc.py').strip()} 100644\n"
        "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
