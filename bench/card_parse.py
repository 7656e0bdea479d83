"""Does parsing a card cost more the more runs it has had? 200 past runs against 1.

Cards are made through the real write-back (`write_card`, an `In Work` and a result per run)
from the same card, so the only difference is how many runs it has had (every third run
fails; the 1st and the 200th are both Done). Each round times the
two parses side by side, alternating, with the parse caches emptied before every parse (a
cached parse costs a dictionary look-up, which is printed separately), and the figure is the
ratio per round: 200 past runs ÷ 1, min / median / max over the rounds. Also printed, for
context, from the same rounds: a card of the old format with 200 `runs:` entries (what the
card looked like before `last_run:`), the write-back of the 200-run card ÷ the 1-run one, the
pure-Python loader ÷ the libyaml scanner on the 1-run card, and a cached parse ÷ an uncached one.
Target: ≤ 1.5× (flat).

    .venv/bin/python bench/card_parse.py [--rounds 15] [--parses 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import header, median

from cardrunner.card import parse as parse_module
from cardrunner.card import text as text_module
from cardrunner.card.card import parse_card, write_card
from cardrunner.card.record import CardUpdate, RunRecord
from cardrunner.card.writeback import update_card_text

CARD = (
    "---\ntitle: Deleting an item should ask first\nstate: New   # New | In Work | Review\n"
    "category: Improvement\n---\nThe invoice table deletes a row at once.\n\n"
    "**Acceptance criteria**\n\n- A dialog names the item.\n- Yes deletes it; No keeps it.\n"
)
PATH = Path("cards/ask.md")


def record(number: int) -> RunRecord:
    return RunRecord(
        id=f"20261201-{number:06d}-ask",
        started="2026-12-01T10:00:00Z",
        result="failed" if number % 3 == 0 else "done",
        reason="max_rounds" if number % 3 == 0 else None,
        rounds=7,
        tokens=41_234,
        cost_usd=0.1834,
        commit=f"c{number:039x}",
        log=f".cardrunner/runs/20261201-{number:06d}-ask.jsonl",
        outcome=None if number % 3 == 0 else "committed",
        evidence=[f"0: verified on c{number:09x} — run_tests 1 passed", "1: verified — run_tests"],
    )


def after_runs(folder: Path, runs: int) -> str:
    """The card's text after `runs` runs through the real write-back."""
    path = folder / f"ask-{runs}.md"
    path.write_text(CARD)
    for number in range(1, runs + 1):
        write_card(path, CardUpdate(state="In Work", reason=None))
        state, reason = ("Failed", "max_rounds") if number % 3 == 0 else ("Done", None)
        write_card(path, CardUpdate(state=state, reason=reason, run=record(number)))
    return path.read_text()


def legacy(runs: int) -> str:
    """The same card in the old format: one `runs:` entry per run (as cardrunner wrote them)."""
    entries = ""
    for number in range(1, runs + 1):
        fields = record(number).entry()
        lines = [f"{k}: {text_module.scalar(v)}" for k, v in fields.items()]
        entries += "  - " + "\n    ".join(lines) + "\n"
    return CARD.replace("category: Improvement\n", f"category: Improvement\nruns:\n{entries}")


def uncached(work: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        text_module._COMPOSED.clear()
        parse_module._PARSED.clear()
        return work()

    return run


def per_call(work: Callable[[], object], calls: int) -> float:
    """Seconds per call of `work`, over `calls` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        work()
    return (time.perf_counter() - start) / calls


def stats(values: list[float]) -> str:
    return f"{min(values):.2f} / {median(values):.2f} / {max(values):.2f}×"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--parses", type=int, default=200, help="parses per card per round")
    args = parser.parse_args()
    header("card_parse: parse time of a card after 200 runs ÷ after 1 run")
    with tempfile.TemporaryDirectory() as tmp:
        one, many = after_runs(Path(tmp), 1), after_runs(Path(tmp), 200)
    old = legacy(200)
    for name, text in (("1 run", one), ("200 runs", many), ("old format, 200 runs", old)):
        card, problems = parse_card(text, PATH)
        assert card is not None and not problems, problems
        print(
            f"   {name:<22} {len(text):>7,} characters, last run {card.last_run and card.last_run.id}"
        )
    pure_loader = text_module._CLoader
    change = {"state": "Done", "run": record(201).entry()}
    work = {
        "one": uncached(lambda: parse_card(one, PATH)),
        "many": uncached(lambda: parse_card(many, PATH)),
        "old": uncached(lambda: parse_card(old, PATH)),
        "write_one": uncached(lambda: update_card_text(one, **change)),
        "write_many": uncached(lambda: update_card_text(many, **change)),
        "cached": lambda: parse_card(one, PATH),
    }
    times: dict[str, list[float]] = {name: [] for name in [*work, "pure"]}
    for _ in range(args.rounds):
        for name, job in work.items():  # alternating: every card meets the same moments
            calls = max(1, args.parses // 20) if name == "old" else args.parses  # ~100× slower
            times[name].append(per_call(job, calls))
        text_module._CLoader = None  # the pure-Python loader alone, on the 1-run card
        try:
            times["pure"].append(per_call(work["one"], args.parses))
        finally:
            text_module._CLoader = pure_loader
    ms = {name: median(values) * 1e3 for name, values in times.items()}

    def ratios(a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(times[a], times[b], strict=True)]

    print(f"   parse, uncached       1 run {ms['one']:.3f} ms   200 runs {ms['many']:.3f} ms"
          f"   old format, 200 runs {ms['old']:.3f} ms   (medians)")  # fmt: skip
    print(
        f"   write-back            1 run {ms['write_one']:.3f} ms   200 runs {ms['write_many']:.3f} ms"
    )
    print(
        f"   parse, 1 run          pure-Python loader {ms['pure']:.3f} ms   cached {ms['cached'] * 1e3:.1f} µs"
    )
    print(
        f"   old format, 200 runs ÷ 1 run (what a card cost before):  {stats(ratios('old', 'one'))}"
    )
    print(
        f"   write-back, 200 runs ÷ 1 run:                           {stats(ratios('write_many', 'write_one'))}"
    )
    print(
        f"   pure-Python loader ÷ libyaml scanner, 1 run:            {stats(ratios('pure', 'one'))}"
    )
    print(
        f"   cached ÷ uncached parse, 1 run:                         {stats(ratios('cached', 'one'))}"
    )
    flat = ratios("many", "one")
    print(f"RATIO parse 200 runs ÷ 1 run (min / median / max over {args.rounds} rounds) = "
          f"{stats(flat)}  (target ≤ 1.5×): {'target met' if median(flat) <= 1.5 else 'TARGET MISSED'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
