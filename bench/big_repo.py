"""Start to the first model request of an isolated run: a 17,000-file repository ÷ the demo.

The repository is generated here (no download): `lib/`, `test/`, `examples/`, `types/`,
`benchmark/` and 83 files in `.changeset/` — 17,000 small files in one commit, the size of the
webpack checkout where issue 41 measured 23×. The small one is the demo's InvoiceApp workspace
(15 files). Both get the same `cardrunner.toml`: isolation on, a write area of one folder, no
build, and a test command that prints a count and exits at once, so the project's own commands
cost the same on both and what differs is cardrunner's own work on a big tree.

Each sample runs `cardrunner run CARD --yes` through the real SDK against the fake Messages API
(in this process) and times from spawning the CLI to the first `/v1/messages` request arriving.
Samples alternate big, small, three of each: the first run of the card creates its worktree,
the next ones take it back (`run/workarea.py`). Beside them, `git worktree add` alone on each
repository (three times each, removed again) — the worktree's own cost, which git pays. Ratios:
big ÷ small for the first run (whole, and less `git worktree add`), and the median of the later
runs (target ≤ 2×). Also the write-area fingerprint of `lib/` (3,000 files) taken afresh, as
every tool call took it before, ÷ taken on the run's kept index.

    .venv/bin/python bench/big_repo.py [--files 17000] [--samples 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import header, median, verdict

from cardrunner.git.repo import GitRepo
from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.verify.calls import GitAreaState

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "server" / "cardrunner" / "demo" / "workspace"
TARGET = 2.0
CARD = """---
title: Say hello
state: New
---
Print hello.

**Acceptance criteria**

- It prints hello.
"""
TOML = """model = "claude-sonnet-5-5"
isolation = true

[paths]
read = ["."]
write = ["{write}"]

[commands]
test = ["python", "-c", "print('1 passed in 0.01s')"]
"""
SHARES = {"lib": 0.18, "test": 0.5, "examples": 0.12, "types": 0.06, "benchmark": 0.14}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def commit_all(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    subprocess.run(
        ["git", "commit", "-qm", "initial"],
        cwd=root,
        check=True,
        env={**os.environ, **env, "GIT_COMMITTER_EMAIL": "b@b"},
    )


def make_big(root: Path, files: int) -> Path:
    """`files` small files in webpack's shape, committed; the card and config on top."""
    (root / ".changeset").mkdir(parents=True)
    for i in range(83):
        (root / ".changeset" / f"change-{i:03d}.md").write_text(f"---\nwebpack: patch\n---\n{i}\n")
    left = files - 83
    for folder, share in SHARES.items():
        count = int(left * share)
        for i in range(count):
            sub = root / folder / f"part{i // 200:03d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"module{i:05d}.js").write_text(f"module.exports = () => {i};\n")
    return finish(root, "lib")


def make_small(root: Path) -> Path:
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns("cards", "__pycache__"))
    return finish(root, "invoice")


def finish(root: Path, write: str) -> Path:
    (root / "cards").mkdir(exist_ok=True)
    (root / "cards" / "hello.md").write_text(CARD)
    (root / "cardrunner.toml").write_text(TOML.format(write=write))
    (root / ".gitignore").write_text("node_modules/\n__pycache__/\n")
    commit_all(root)
    return root


def tracked(root: Path) -> int:
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout
    return len(out.splitlines())


def first_request(root: Path) -> float:
    """Seconds from spawning `cardrunner run` to its first Messages API request."""
    arrived = threading.Event()
    stamp: list[float] = []

    def answer(body: dict[str, Any], index: int) -> dict[str, Any]:
        if index == 0:
            stamp.append(time.perf_counter())
            arrived.set()
        return {"content": [{"type": "text", "text": "RESULT: failed"}], "stop_reason": "end_turn"}

    with FakeMessagesAPI(answer, check_history=False) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-b"}
        env["CARDRUNNER_TRUST"] = "1"  # the generated config is ours
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cardrunner", "run", "cards/hello.md", "--yes"],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if not arrived.wait(300):
            proc.kill()
            raise SystemExit(f"no model request from the run in {root}:\n{proc.communicate()[0]}")
        out = proc.communicate(timeout=300)[0]
    reset(root)
    if not stamp:
        raise SystemExit(out)
    return stamp[0] - started


def reset(root: Path) -> None:
    """The card back to New and the run's card commit gone: each sample starts alike."""
    first = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.split()[0]
    git(root, "reset", "-q", "--hard", first)


def worktree_cost(root: Path) -> float:
    """Seconds `git worktree add` takes alone on `root` (the folder removed again after)."""
    target = root.parent / f"{root.name}-wt"
    started = time.perf_counter()
    git(root, "worktree", "add", "-q", "--detach", str(target))
    took = time.perf_counter() - started
    git(root, "worktree", "remove", "--force", str(target))
    return took


def fingerprint_cost(root: Path, calls: int = 5) -> tuple[float, float]:
    """Median seconds of a write-area fingerprint (`lib/`) taken afresh (a new index from HEAD,
    as before issue 41) and taken incrementally (the run's kept index), `calls` each."""
    repo = GitRepo(root)
    state = GitAreaState(repo, ["lib"])

    async def measure() -> tuple[float, float]:
        fresh, kept = [], []
        await state.fingerprint()
        for _ in range(calls):
            started = time.perf_counter()
            await repo.snapshot(["lib"])
            fresh.append(time.perf_counter() - started)
            started = time.perf_counter()
            await state.fingerprint()
            kept.append(time.perf_counter() - started)
        return median(fresh), median(kept)

    return asyncio.run(measure())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=17_000)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    header("big_repo: start → first model request, 17k files ÷ the demo")
    with tempfile.TemporaryDirectory(prefix="big-repo-") as tmp:
        big = make_big(Path(tmp) / "big", args.files)
        small = make_small(Path(tmp) / "demo")
        print(f"repositories: big {tracked(big):,} files, demo {tracked(small):,} files")
        times: dict[str, list[float]] = {"big": [], "demo": []}
        trees: dict[str, list[float]] = {"big": [], "demo": []}
        for _ in range(args.samples):
            for name, root in (("big", big), ("demo", small)):
                trees[name].append(worktree_cost(root))
                times[name].append(first_request(root))
                print(f"  {name}: first request {times[name][-1]:.2f} s, "
                      f"git worktree add alone {trees[name][-1]:.2f} s")  # fmt: skip
        fresh, kept = fingerprint_cost(big)
    for name in ("big", "demo"):
        print(
            f"{name}: start → first request {', '.join(f'{t:.2f}' for t in times[name])} s "
            f"(the first creates the card's worktree, the next take it back); git worktree add "
            f"alone median {median(trees[name]):.2f} s"
        )
    first = times["big"][0] / times["demo"][0]
    again = median(times["big"][1:]) / median(times["demo"][1:])
    own = (times["big"][0] - median(trees["big"])) / (times["demo"][0] - median(trees["demo"]))
    print(f"RATIO first run (worktree created) big ÷ demo: {first:.2f}× (reported)")
    print(f"RATIO first run less git worktree add, big ÷ demo: {own:.2f}× (reported)")
    print(
        f"RATIO later runs (the card's worktree reused) big ÷ demo, median: {again:.2f}× "
        f"(target ≤ {TARGET}×: {verdict(again, TARGET)})"
    )
    print(
        f"RATIO write-area fingerprint incremental ÷ afresh: {kept / fresh:.2f}× "
        f"({kept * 1000:.0f} vs {fresh * 1000:.0f} ms, median of 5)"
    )


if __name__ == "__main__":
    main()
