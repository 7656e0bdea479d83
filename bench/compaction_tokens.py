"""Tokens of a long run with compaction against the same run without it.

Each run reads a 4,000-character file once a round (thinking on, as on Claude Sonnet 5.5), then
fixes the card of `tests/support/project.py`, through the real `anthropic` SDK against the strict
fake Messages API (prefix checks on, prompt cache simulated). "Without" gives the run a 1M-token
window, so it never compacts; "with" gives it 40,000 tokens at `compact_at` 0.5, so it stubs old
tool results and removes the thinking it would invalidate, in steps. Billed-input-equivalent
tokens = input + 0.1 × cache_read + 1.25 × cache_write, summed over the rounds; output tokens
beside them. Both runs of a length make the same calls, so the ratio is what compaction saves.

    .venv/bin/python bench/compaction_tokens.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import header

LENGTHS = (30, 60)
WINDOW = 40_000


@dataclass
class Tokens:
    billed: float
    output: int
    cache_read: int
    largest_request: int
    compactions: int
    rejected: int


def steps(rounds: int) -> list[dict[str, Any]]:
    from tests.support.project import fix_transcript, turn, use

    fix = fix_transcript()
    looking = [
        turn(use("read_file", path="src/notes.py", start_line=1 + i % 150), think="Look on.")
        for i in range(rounds - len(fix))
    ]
    return [*looking, *fix]


async def one(dest: Path, rounds: int, window: int) -> Tokens:
    from cardrunner.agent.events import Compacted
    from tests.support.api_run import run_through_api
    from tests.support.project import git, make_project

    options = f"\n[options]\ncontext_window = {window}\ncompact_at = 0.5\nkeep_tool_results = 4\n"
    card = make_project(dest, extra_toml=options)
    toml = dest / "cardrunner.toml"
    toml.write_text(toml.read_text().replace("max_rounds = 30", "max_rounds = 0\nmax_tokens = 0"))
    (dest / "src" / "notes.py").write_text(
        "".join(f"# note {i:04d}: keep it\n" for i in range(200))
    )
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "notes")
    run = await run_through_api(dest, card, steps(rounds))
    if run.result.status != "done":
        raise SystemExit(f"{rounds} rounds, window {window}: {run.result}")
    usages = [r["usage"] for r in run.api.responses]
    return Tokens(
        billed=sum(
            u["input_tokens"]
            + 0.1 * u.get("cache_read_input_tokens", 0)
            + 1.25 * u.get("cache_creation_input_tokens", 0)
            for u in usages
        ),
        output=sum(u["output_tokens"] for u in usages),
        cache_read=sum(u.get("cache_read_input_tokens", 0) for u in usages),
        largest_request=max(len(str(b["messages"])) // 4 for b in run.bodies),
        compactions=sum(isinstance(e, Compacted) for e in run.events),
        rejected=len(run.api.violations),
    )


async def main() -> int:
    header("compaction: billed input tokens of a long run with compaction / without")
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        for rounds in LENGTHS:
            off = await one(Path(tmp) / f"off-{rounds}", rounds, 1_000_000)
            on = await one(Path(tmp) / f"on-{rounds}", rounds, WINDOW)
            for name, t in (("without", off), ("with", on)):
                print(
                    f"   {rounds} rounds {name:<8} billed input {t.billed:>11,.0f}   output "
                    f"{t.output:>7,}   cache reads {t.cache_read:>10,}   largest request "
                    f"{t.largest_request:>7,} tok   compactions {t.compactions:>2}   "
                    f"rejected {t.rejected}"
                )
            print(
                f"RATIO {rounds} rounds with/without: billed input {on.billed / off.billed:.3f}×, "
                f"output {on.output / off.output:.3f}×, largest request "
                f"{on.largest_request / off.largest_request:.3f}×"
            )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
