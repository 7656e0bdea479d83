"""The Messages API's rules on whole runs through the real SDK and the strict fake (prefix
checks on): each run ends with zero requests the fake rejected."""

from __future__ import annotations

from pathlib import Path

from tests.support.api_run import run_through_api
from tests.support.project import fix_transcript, make_project, turn, use


async def test_a_round_where_three_parallel_calls_fail_and_the_run_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    missing = turn(
        use("read_file", path="src/a.py"),
        use("read_file", path="src/b.py"),
        use("read_file", path="src/c.py"),
        think="Read all three at once.",
    )
    run = await run_through_api(root, card, [missing, *fix_transcript()])
    assert not run.api.violations, run.api.violations
    assert run.result.status == "done", run.result
    errors = run.bodies[1]["messages"][-1]["content"]
    assert [b.get("is_error") for b in errors] == [True, True, True]
