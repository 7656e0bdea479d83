"""The lines `cardrunner plan` writes to stderr for a human reading the job's log."""

from __future__ import annotations

from cardrunner.board.plan import Conflict, Plan, Skipped
from cardrunner.cli.plan import warnings


def test_an_overlap_names_a_few_files_and_counts_the_rest() -> None:
    files = [f"src/m{i}.py" for i in range(8)]
    plan = Plan(
        include=[],
        conflicts=[Conflict(cards=("cards/a.md", "cards/b.md"), files=files)],
        skipped=[Skipped(card="cards/c.md", why="the board budget of $1.00 is reached")],
        budget_usd=1.0,
        scheduled_usd=1.0,
    )
    assert warnings(plan) == [
        "cards/a.md and cards/b.md both touch src/m0.py, src/m1.py, src/m2.py, src/m3.py, "
        "src/m4.py and 3 more: running them in parallel makes their pull requests conflict",
        "cards/c.md not scheduled: the board budget of $1.00 is reached",
    ]
