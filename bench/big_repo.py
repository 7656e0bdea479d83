"""Start to the first model request of an isolated run: a 17,000-file repository ÷ the demo.

The repository is generated here (no download): `lib/`, `test/`, `examples/`, `types/`,
`benchmark/` and 83 files in `.changeset/` — 17,000 small files in one commit, the size of the
webpack checkout where issue 41 measured 23×. The small one is the demo's InvoiceApp workspace
(15 files). Both get the same `cardrunner.toml`: isolation on, a write area of one folder, no
build, and a test command that prints a count and exits at once, so the project's own commands
cost the same on both and what differs is cardrunner's own work on a big tree.

Each sample runs `cardrunner run CARD --yes` through the real SDK against the fake Messages API
(in this process) and times from spawning the CLI to the first `/v1/messages` request arriving.
A sample is two runs of the card on each repository, alternating big and small: the first with
no worktree put aside (the run makes one: `git worktree add`), the second taking that one back
(`run/workarea.py`). The first run's own start line says what git's checkout of its worktree
took (`a new worktree for the run: git's checkout took X s`): the worktree's own cost, measured
in that very run and reported beside. Ratios, big ÷ small, medians over the samples: the first
run less its checkout (cardrunner's own work, target ≤ 2×), the first run whole, and the later
runs (target ≤ 2×). Also the write-area snapshot of `lib/` (3,000 files) in an index read fresh
from HEAD (every snapshot before) ÷ in one begun from the repository's own (`git/indexes.py`),
and the run's kept fingerprint index ÷ fresh.

    .venv/bin/python bench/big_repo.py [--files 17000] [--samples 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
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


CHECKOUT = re.compile(r"a new worktree for the run: git's checkout took ([0-9.]+) s")


def first_request(root: Path) -> tuple[float, float | None]:
    """Seconds from spawning `cardrunner run` to its first Messages API request, and what the
    run said git's checkout of a new worktree took (None: it took back the card's worktree)."""
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
    made = CHECKOUT.search(out)
    return stamp[0] - started, float(made.group(1)) if made else None


def reset(root: Path) -> None:
    """The card back to New and the run's card commit gone: each sample starts alike."""
    first = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.split()[0]
    git(root, "reset", "-q", "--hard", first)


def forget_worktrees(root: Path) -> None:
    """No worktree put aside: the card's next run makes its own, as its first run does."""
    for parked in (root / ".cardrunner" / "worktrees").glob("parked-*"):
        git(root, "worktree", "remove", "--force", str(parked))
    git(root, "worktree", "prune")


def fresh_snapshot(root: Path, paths: list[str]) -> str:
    """A snapshot as every one was before issue 41: HEAD read into an empty index, `git add`."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for args in (["read-tree", "HEAD"], ["add", "-A", "--", *paths], ["write-tree"]):
            out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
        return out.stdout.strip()


def snapshot_cost(root: Path, calls: int = 5) -> tuple[float, float, float]:
    """Median seconds of a snapshot of `lib/` (3,000 files) in a fresh index, in one begun from
    the repository's own (`GitRepo.snapshot`), and of the run's kept fingerprint index."""
    repo = GitRepo(root)
    state = GitAreaState(repo, ["lib"])
    subprocess.run(["git", "status", "-s"], cwd=root, capture_output=True)  # the user's index

    async def measure() -> tuple[float, float, float]:
        fresh, seeded, kept = [], [], []
        await state.fingerprint()
        for _ in range(calls):
            started = time.perf_counter()
            tree = fresh_snapshot(root, ["lib"])
            fresh.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert await repo.snapshot(["lib"]) == tree
            seeded.append(time.perf_counter() - started)
            started = time.perf_counter()
            await state.fingerprint()
            kept.append(time.perf_counter() - started)
        return median(fresh), median(seeded), median(kept)

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
        first: dict[str, list[float]] = {"big": [], "demo": []}
        checkout: dict[str, list[float]] = {"big": [], "demo": []}
        later: dict[str, list[float]] = {"big": [], "demo": []}
        for _ in range(args.samples):
            for name, root in (("big", big), ("demo", small)):
                forget_worktrees(root)
                took, made = first_request(root)
                if made is None:
                    raise SystemExit(f"the first run in {root} did not make a worktree")
                again, remade = first_request(root)
                if remade is not None:
                    raise SystemExit(f"the second run in {root} did not take the worktree back")
                first[name].append(took)
                checkout[name].append(made)
                later[name].append(again)
                print(f"  {name}: first run {took:.2f} s (git's checkout in it {made:.2f} s), "
                      f"later run {again:.2f} s")  # fmt: skip
        fresh, seeded, kept = snapshot_cost(big)
    own = {n: [t - c for t, c in zip(first[n], checkout[n], strict=True)] for n in first}
    ratio_own = median(own["big"]) / median(own["demo"])
    ratio_whole = median(first["big"]) / median(first["demo"])
    ratio_later = median(later["big"]) / median(later["demo"])
    for name in ("big", "demo"):
        print(
            f"{name}: first run {median(first[name]):.2f} s, less git's checkout "
            f"{median(own[name]):.2f} s; git's checkout of the worktree {median(checkout[name]):.2f}"
            f" s; later runs {median(later[name]):.2f} s (medians of {args.samples})"
        )
    print(
        f"RATIO first run less git's checkout (same run), big ÷ demo: {ratio_own:.2f}× "
        f"(target ≤ {TARGET}×: {verdict(ratio_own, TARGET)}); git's checkout beside it: "
        f"{median(checkout['big']):.2f} s vs {median(checkout['demo']):.2f} s"
    )
    print(f"RATIO first run whole, big ÷ demo: {ratio_whole:.2f}× (reported)")
    print(
        f"RATIO later runs (the card's worktree taken back), big ÷ demo: {ratio_later:.2f}× "
        f"(target ≤ {TARGET}×: {verdict(ratio_later, TARGET)})"
    )
    print(
        f"RATIO snapshot of lib/ in an index begun from the repository's ÷ read fresh: "
        f"{seeded / fresh:.2f}× ({seeded * 1000:.0f} vs {fresh * 1000:.0f} ms, median of 5); "
        f"the run's kept fingerprint index ÷ fresh {kept / fresh:.2f}× ({kept * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
