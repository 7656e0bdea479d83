"""How does `cardrunner plan` scale with the board? Ours against a card-by-card baseline.

For boards of 10, 100 and 1,000 New cards, each card with two past runs in the history (a
commit with its `Card:` trailer touching two of 200 source files, so overlaps exist), the plan
is made in process with `make_plan`:
- **ours**: one `git log` over the history for the whole board (`BranchRepo.card_history`);
- **baseline**: what a planner does card by card — `git log --grep=^Card: <slug>$` for each
  card, then `git show --name-only` for each of its commits (the first version of `plan`).
Both must find the same conflicts. Repetitions alternate between the two so both meet the
same moments of a shared machine. Targets: ours flat per card (1000/10 ≤ 1.5×) and at 1,000
cards ≤ 0.2× the baseline.

    .venv/bin/python bench/plan_board.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import header, median

from cardrunner.board import plan as plan_module
from cardrunner.board.plan import Selection, make_plan
from cardrunner.config.settings import Settings
from cardrunner.git.branches import BranchRepo, CardHistory

SIZES = (10, 100, 1000)
SOURCES = 200


def make_repo(root: Path, cards: int) -> None:
    """A repository with `cards` New cards and two trailer commits per card (git fast-import)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    lines: list[str] = []
    mark = 0

    def commit(message: str, files: dict[str, str]) -> None:
        nonlocal mark
        mark += 1
        data = message.encode()
        lines.append(f"commit refs/heads/main\nmark :{mark}\n")
        lines.append("committer Bench <bench@example.com> 1700000000 +0000\n")
        lines.append(f"data {len(data)}\n{message}\n")
        if mark > 1:
            lines.append(f"from :{mark - 1}\n")
        for path, text in files.items():
            blob = text.encode()
            lines.append(f"M 100644 inline {path}\ndata {len(blob)}\n{text}\n")

    sources = {f"src/m{i}.py": f"x = {i}\n" for i in range(SOURCES)}
    cards_text = {
        f"cards/c{i}.md": f"---\ntitle: Card {i}\nstate: New\n---\nWork on card {i}.\n\n"
        "**Acceptance criteria**\n\n- It works.\n"
        for i in range(cards)
    }
    commit("start", {**sources, **cards_text})
    for run in range(2):
        for i in range(cards):
            touched = {
                f"src/m{(i * 7 + run * 3 + k) % SOURCES}.py": f"# {i} {run} {k}\n" for k in (0, 1)
            }
            commit(f"card: Card {i}\n\nDone.\n\nCard: c{i}\nRun: r{run}-{i}", touched)
    stream = "".join(lines).encode()
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=stream, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)


class PerCardHistory(BranchRepo):
    """The baseline: the history read card by card, as a planner without a board pass does."""

    async def card_history(self) -> CardHistory:
        history = CardHistory()
        for card in sorted((self.root / "cards").glob("*.md")):
            slug = card.stem
            out = await self._git("log", "--format=%H", f"--grep=^Card: {slug}$", "HEAD")
            shas = out.text.split()
            history.commits[slug] = shas
            for sha in shas:
                show = await self._git("show", "--relative", "--name-only", "-z", "--format=", sha)
                history.files[sha] = frozenset(show.items())
        return history


async def timed(root: Path, baseline: bool) -> tuple[float, int]:
    plan_module.BranchRepo = PerCardHistory if baseline else BranchRepo  # type: ignore[misc]
    start = time.perf_counter()
    plan = await make_plan(root, Settings(), Selection())
    return time.perf_counter() - start, len(plan.conflicts)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    header("plan_board: cardrunner plan, one history pass vs card by card")
    ours: dict[int, float] = {}
    base: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            root = Path(tmp) / f"board-{size}"
            make_repo(root, size)
            times: dict[bool, list[float]] = {False: [], True: []}
            found: dict[bool, int] = {}
            for _ in range(args.repeat):
                for baseline in (False, True):
                    seconds, conflicts = asyncio.run(timed(root, baseline))
                    times[baseline].append(seconds)
                    found[baseline] = conflicts
            if found[False] != found[True]:
                print(f"invalid: {found[False]} conflicts against {found[True]} at {size} cards")
                return 2
            ours[size], base[size] = median(times[False]), median(times[True])
            print(
                f"{size:5d} cards: ours {ours[size] * 1000:8.1f} ms · baseline "
                f"{base[size] * 1000:8.1f} ms · {found[False]} conflicts"
            )
    flat = (ours[1000] / 1000) / (ours[10] / 10)
    versus = ours[1000] / base[1000]
    print(f"RATIO ours per card 1000/10: {flat:.2f}× (target ≤ 1.5×) — {_verdict(flat, 1.5)}")
    print(
        f"RATIO ours/baseline at 1000 cards: {versus:.2f}× (target ≤ 0.2×) — {_verdict(versus, 0.2)}"
    )
    return 0


def _verdict(ratio: float, target: float) -> str:
    return "target met" if ratio <= target else "TARGET MISSED"


if __name__ == "__main__":
    sys.exit(main())
