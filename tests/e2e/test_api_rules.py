"""The Messages API's rules on whole runs through the real SDK and the strict fake (prefix
checks on): each run ends with zero requests the fake rejected."""

from __future__ import annotations

import json
from pathlib import Path

from cardrunner.agent.events import Compacted, RoundFinished
from cardrunner.terminal.liveview import LiveView
from tests.support.api_run import run_through_api
from tests.support.project import (
    CALC,
    FIXED,
    cli,
    fix_transcript,
    git,
    make_project,
    turn,
    use,
)


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
    assert run.result.status == "done", (run.result.reason, run.result.detail)
    errors = run.bodies[1]["messages"][-1]["content"]
    assert [b.get("is_error") for b in errors] == [True, True, True]
    first = run.bodies[0]  # fitted to Sonnet 5.5 by the model table, effort sent explicitly
    assert (first["max_tokens"], first["output_config"]) == (128_000, {"effort": "high"})
    # its text between tool calls arrives as thinking: asked for, logged and shown
    assert first["thinking"] == {"type": "adaptive", "display": "summarized"}
    [said] = [e for e in run.events if isinstance(e, RoundFinished)][:1]
    assert said.text == "Read all three at once."
    [log] = (root / ".cardrunner/runs").glob("*.jsonl")
    assert '"text":"Read all three at once."' in log.read_text()
    shown: list[str] = []
    view = LiveView(shown.append, tty=False)
    for event in run.events:
        view.show(event)
    assert "  » Read all three at once.\n" in shown


async def test_a_cost_limit_without_a_price_refuses_to_start_and_check_says_so(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = make_project(root, extra_toml="max_cost_usd = 1.5\n")
    toml = root / "cardrunner.toml"
    toml.write_text(
        toml.read_text().replace('model = "claude-sonnet-5-5"', 'model = "house-model"')
    )
    git(root, "commit", "-qam", "an unpriced model")
    run = await run_through_api(root, card, [])
    assert run.result.reason == "config_error"
    assert "[prices.house-model]" in run.result.detail and "$1.50" in run.result.detail
    assert run.bodies == [], "not one request was sent"
    checked = cli(root, "check")
    assert checked.returncode != 0 and "[prices.house-model]" in checked.stdout


async def test_a_45_round_run_on_sonnet_5_5_compacts_and_every_request_is_accepted(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    options = (
        '\n[options]\neffort = "high"\ncontext_window = 40000\ncompact_at = 0.5\n'
        "keep_tool_results = 4\n"
    )
    card = make_project(root, extra_toml=options)
    toml = root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace("max_rounds = 30", "max_rounds = 60\nmax_tokens = 0"))
    (root / "src" / "notes.py").write_text("".join(f"# note {i:04d}: keep\n" for i in range(200)))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    looking = [
        turn(use("read_file", path="src/notes.py", start_line=1 + i), think="" if i % 2 else "Go.")
        for i in range(45)
    ]
    run = await run_through_api(root, card, [*looking, *fix_transcript()])
    assert not run.api.violations, run.api.violations
    assert run.result.status == "done", (run.result.reason, run.result.detail)
    assert run.result.rounds == 45 + len(fix_transcript())
    compactions = [e for e in run.events if isinstance(e, Compacted)]
    assert {e.kind for e in compactions} >= {"stub_tool_results"}
    assert all(b["model"] == "claude-sonnet-5-5" for b in run.bodies)
    assert all(b["output_config"] == {"effort": "high"} for b in run.bodies)
    largest = max(len(json.dumps(b["messages"])) for b in run.bodies) / 4
    assert largest < 40_000, "compaction kept every request inside the window"


async def test_a_2000_line_file_is_changed_through_edit_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    filler = "".join(f"\n\ndef f{i}(x):\n    return x + {i}\n" for i in range(499))
    filler += "\n# the end\n"
    (root / "src" / "calc.py").write_text(CALC + filler)
    git(root, "commit", "-qam", "a long module")
    assert len((root / "src" / "calc.py").read_text().splitlines()) == 2000
    fix = {
        "old_text": "def add(a, b):\n    return a - b",
        "new_text": "def add(a, b):\n    return a + b",
    }
    steps = [
        turn(use("read_file", path="src/calc.py", max_lines=5), think="Only the top matters."),
        turn(use("edit_file", path="src/calc.py", edits=[fix]), think="One line to change."),
        *fix_transcript()[3:],  # build and test, report, commit, done
    ]
    run = await run_through_api(root, card, steps)
    assert not run.api.violations, run.api.violations
    assert run.result.status == "done", (run.result.reason, run.result.detail)
    text = (root / "src" / "calc.py").read_text()
    assert text == FIXED + filler and len(text.splitlines()) == 2000
    edited = run.bodies[2]["messages"][-1]["content"][0]
    assert edited["content"] == "edited src/calc.py: 1 replacement(s) at line 1 (2 → 2 lines)"
    sent = json.dumps(run.bodies[2]["messages"][-2]["content"])
    assert len(sent) < len(text) // 20, "the call carried the change, not the file"


def test_check_names_a_thinking_setting_the_model_refuses(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_project(root, extra_toml='\n[options]\nthinking = "disabled"\n')
    checked = cli(root, "check")
    assert checked.returncode != 0
    assert "refused by claude-sonnet-5-5" in checked.stdout and "between_tools" in checked.stdout
