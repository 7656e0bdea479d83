"""`cardrunner run` end to end: a real subprocess, the real SDK, a strict fake API, real tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault
from tests.support.project import (
    FIXED,
    TEST,
    cli,
    final,
    fix_transcript,
    git,
    log_records,
    make_project,
    report,
    slug_of,
    turn,
    use,
    write_transcript,
)


def api_env(api: FakeMessagesAPI) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test-cli"}


def front_matter(card: Path) -> dict[str, object]:
    text = card.read_text()
    return yaml.safe_load(text.split("---")[1])


def test_a_card_run_end_to_end_through_the_real_sdk(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        assert proc.returncode == 0, proc.stderr
        api.assert_complete()  # no invalid request, every scripted answer used
        bodies = [r.body for r in api.requests if r.index is not None]
    for i, body in enumerate(bodies):
        assert "temperature" not in body and "top_p" not in body
        if i >= 1:
            marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
            assert marked, f"request {i + 1} has no cache breakpoint in the conversation"
    # the card ended Done with the run's record; nothing else in it changed
    meta = front_matter(card)
    assert meta["state"] == "Done"
    run = meta["last_run"]  # type: ignore[index]
    assert run["result"] == "done" and run["rounds"] == 7 and run["commit"]
    assert (
        card.read_text().split("---", 2)[2]
        == (tmp_path / "cards/fix-add.md").read_text().split("---", 2)[2]
    )
    # the run's commit holds only allowed paths, and the trailers; the card's new state follows
    # in a commit of its own, so nothing is left modified
    assert git(tmp_path, "rev-parse", "HEAD~1").strip() == run["commit"]
    files = git(tmp_path, "show", "--name-only", "--format=", "HEAD~1").split()
    assert files == ["src/calc.py"]
    assert git(tmp_path, "show", "--name-only", "--format=", "HEAD").split() == ["cards/fix-add.md"]
    assert git(tmp_path, "show", "HEAD:cards/fix-add.md") == card.read_text()
    assert git(tmp_path, "status", "--porcelain") == ""
    assert (
        git(tmp_path, "log", "-1", "--format=%s")
        == "card: Adding two numbers subtracts them → Done\n"
    )
    message = git(tmp_path, "log", "-1", "--format=%B", "HEAD~1")
    assert message.startswith("card: Adding two numbers subtracts them")
    for trailer in (f"Card: {slug_of('cards/fix-add.md')}", "Run: ", "Rounds: 6", "Cost: $"):
        assert trailer in message
    assert (tmp_path / "src/calc.py").read_text() == FIXED
    # the log has every kind of line with the fields of DESIGN.md
    records = log_records(tmp_path)
    kinds = [r["type"] for r in records]
    for kind in ("start", "round", "tool", "review", "result"):
        assert kind in kinds
    by = {r["type"]: r["data"] for r in records}
    assert {"card", "model", "tools", "limits"} <= by["start"].keys()
    assert {
        "round",
        "ms",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cost_usd",
        "stop_reason",
        "calls",
        "text",
    } <= by["round"].keys()
    assert {"name", "arguments", "ms", "result", "is_error"} <= by["tool"].keys()
    assert {"decision", "reason", "files"} <= by["review"].keys()
    assert {
        "status",
        "reason",
        "detail",
        "rounds",
        "tool_calls",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "commit",
    } <= by["result"].keys()
    assert any(
        r["data"].get("cache_read_input_tokens", 0) > 0 for r in records if r["type"] == "round"
    )
    assert all(r["time"].endswith("Z") for r in records)
    assert "sk-test-cli" not in json.dumps(records)
    assert "DONE" in proc.stderr and "7 rounds" in proc.stderr


def test_reject_then_accept_on_the_terminal(tmp_path: Path) -> None:
    make_project(tmp_path)
    with FakeMessagesAPI(fix_transcript(commit_attempts=2)) as api:
        proc = cli(
            tmp_path,
            "run",
            "cards/fix-add.md",
            env=api_env(api),
            stdin="n\nplease mention the test\ny\n",
        )
        assert proc.returncode == 0, proc.stderr
        api.assert_complete()
        after_reject = [r.body for r in api.requests if r.index is not None][-2]
    result = after_reject["messages"][-1]["content"][0]
    assert "REJECTED" in str(result["content"]) and "please mention the test" in str(
        result["content"]
    )
    assert "attempt 2" in git(tmp_path, "log", "-1", "--format=%B", "HEAD~1")
    decisions = [r["data"]["decision"] for r in log_records(tmp_path) if r["type"] == "review"]
    assert decisions == ["reject", "accept"]


def test_no_commit_reviews_but_never_commits(tmp_path: Path) -> None:
    make_project(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD")
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--no-commit", env=api_env(api))
    # verified, not committed: its own exit status and card state, never Done
    assert proc.returncode == 3, proc.stderr
    assert git(tmp_path, "rev-parse", "HEAD") == head  # not even the card's state
    assert "VERIFIED, not committed" in proc.stderr
    meta = front_matter(tmp_path / "cards" / "fix-add.md")
    assert meta["state"] == "Review" and meta["last_run"]["outcome"] == "not_committed"
    assert "return a + b" in (tmp_path / "src" / "calc.py").read_text(), "the change is kept"


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (["--max-rounds", "2"], "max_rounds"),
        (["--max-tokens", "500"], "max_tokens"),
        (["--max-cost", "0.0001"], "max_cost"),
    ],
)
def test_each_cli_budget_ends_with_its_reason(
    tmp_path: Path, flags: list[str], reason: str
) -> None:
    card = make_project(tmp_path)
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", *flags, env=api_env(api))
    assert proc.returncode == 1, proc.stderr
    meta = front_matter(card)
    assert (meta["state"], meta["reason"]) == ("Failed", reason)
    assert log_records(tmp_path)[-1]["data"]["reason"] == reason


def test_429_then_success(tmp_path: Path) -> None:
    make_project(tmp_path)
    with FakeMessagesAPI(
        fix_transcript(), faults={0: Fault.rate_limited(50), 3: Fault.server_error()}
    ) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        assert proc.returncode == 0, proc.stderr
        api.assert_complete()


def test_529_every_time_ends_api_error(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    with FakeMessagesAPI(
        fix_transcript(), faults={i: Fault.overloaded() for i in range(10)}
    ) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        attempts = len([r for r in api.requests if r.index is not None])
    assert proc.returncode == 1
    assert front_matter(card)["reason"] == "api_error"
    assert attempts == 4  # one try and three retries
    assert "529" in log_records(tmp_path)[-1]["data"]["detail"]


def test_a_hanging_command_is_killed_at_its_timeout(tmp_path: Path) -> None:
    make_project(tmp_path, timeout=2)
    (tmp_path / "tests" / "test_calc.py").write_text(
        "import time\n\ndef test_hang():\n    time.sleep(120)\n"
    )
    git(tmp_path, "commit", "-qam", "a slow test")
    steps = [turn(use("run_tests")), final("RESULT: failed: tests hang")]
    with FakeMessagesAPI(steps) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        api.assert_complete()
    assert proc.returncode == 1
    tool = next(r["data"] for r in log_records(tmp_path) if r["type"] == "tool")
    assert "timed out" in tool["result"] and tool["is_error"]


def test_unknown_tool_bad_arguments_and_path_escapes_go_back_to_the_model(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "src" / "link").symlink_to("/etc")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "a symlink")
    bad = [
        use("delete_everything"),
        use("read_file", path=42),
        use("write_file", path="../outside.txt", content="x"),
        use("write_file", path="/tmp/outside.txt", content="x"),
        use("read_file", path="src/link/passwd"),
        use("read_file", path=".git/config"),
    ]
    fine = [use("list_files", path=p) for p in ("src", "tests", ".", "src", "tests", ".")]
    steps = [
        *[turn(step) for pair in zip(bad, fine, strict=True) for step in pair],
        final("RESULT: failed: nothing to do"),
    ]
    with FakeMessagesAPI(steps) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        api.assert_complete()
    assert proc.returncode == 1
    tools = [r["data"] for r in log_records(tmp_path) if r["type"] == "tool"]
    errors = [t for t in tools if t["is_error"]]
    assert len(errors) == 6
    assert "Unknown tool" in errors[0]["result"]
    assert "Invalid arguments" in errors[1]["result"]
    assert not (tmp_path.parent / "outside.txt").exists() and not Path("/tmp/outside.txt").exists()
    assert "root:" not in json.dumps(tools)
    assert log_records(tmp_path)[-1]["data"]["reason"] == "model_failed"


def test_a_dirty_write_area_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    (tmp_path / "src" / "calc.py").write_text("# my own work in progress\n")
    (tmp_path / "src" / "new.py").write_text("x = 1\n")
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        assert not [r for r in api.requests if r.index is not None], "no model call was made"
    assert proc.returncode == 2
    assert "src/calc.py" in proc.stderr and "src/new.py" in proc.stderr
    assert (tmp_path / "src" / "calc.py").read_text() == "# my own work in progress\n"
    assert front_matter(card)["state"] == "New"


def test_without_a_key_the_message_names_the_variable_and_replay(tmp_path: Path) -> None:
    make_project(tmp_path)
    proc = cli(tmp_path, "run", "cards/fix-add.md")
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr and "--replay" in proc.stderr


def test_replay_runs_a_transcript_with_the_real_tools_and_no_key(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    transcript = write_transcript(tmp_path.parent / f"{tmp_path.name}-t.json", fix_transcript())
    proc = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert front_matter(card)["state"] == "Done"
    summary = cli(tmp_path, "log", str(sorted((tmp_path / ".cardrunner/runs").glob("*.jsonl"))[-1]))
    assert "result: DONE" in summary.stdout and "git_commit" in summary.stdout


def test_a_failing_test_says_why_in_the_run_output_and_the_log(tmp_path: Path) -> None:
    """The sandbox refuses a write outside the write area: EROFS and its path are shown, not
    only `test exit 1` and `0 problem(s)`."""
    make_project(tmp_path)
    (tmp_path / "tests" / "test_calc.py").write_text(
        "from pathlib import Path\n\n\ndef test_writes_beside_itself():\n"
        "    (Path(__file__).parents[1] / '.git' / 'out.txt').write_text('x')\n"
    )
    git(tmp_path, "commit", "-qam", "a test that writes into .git (read-only for builds)")
    steps = [turn(use("run_tests")), final("RESULT: failed: the tests cannot write")]
    with FakeMessagesAPI(steps) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        api.assert_complete()
    assert proc.returncode == 1
    erofs = f"Read-only file system: '{tmp_path / '.git' / 'out.txt'}'"
    baseline = proc.stderr.split("runner's checks (baseline)", 1)[1].splitlines()
    assert erofs in "\n".join(baseline[1:4]), proc.stderr
    run_tests = proc.stderr.split("✗ run_tests:", 1)[1].splitlines()
    assert erofs in "\n".join(run_tests[1:4]), proc.stderr
    assert not (tmp_path / ".git" / "out.txt").exists()
    log = sorted((tmp_path / ".cardrunner/runs").glob("*.jsonl"))[-1]
    summary = cli(tmp_path, "log", str(log)).stdout
    assert summary.count(erofs) >= 2, summary


def test_tests_that_cannot_be_counted_are_named_in_the_review_and_the_commit(
    tmp_path: Path,
) -> None:
    card = make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    custom = json.dumps(["python", "-c", "print('1 passed, says the custom runner')"])
    toml.write_text(
        toml.read_text().replace(
            'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]',
            f"test = {custom}",
        )
    )
    git(tmp_path, "commit", "-qam", "a runner cardrunner cannot count")
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
        api.assert_complete()
    assert proc.returncode == 0, proc.stderr
    assert (
        "tests not counted (unknown runner output): a deleted test would not be noticed"
        in proc.stderr
    )
    review = next(r["data"] for r in log_records(tmp_path) if r["type"] == "review_request")
    assert (
        "tests not counted (unknown runner output): a deleted test would not be noticed"
        in review["warnings"]
    )
    message = git(tmp_path, "log", "--format=%B", "--grep=^card: Adding")
    assert "Checks: build ok · test ok, tests not counted (unknown runner output)" in message
    assert front_matter(card)["state"] == "Done"


def test_a_change_that_waits_on_a_side_branch_exits_4_never_0(tmp_path: Path) -> None:
    """Uncommitted work in the file the card changes: the isolated run's accepted commit cannot
    land on the user's branch, so it waits on its own — exit 4 and words that say so, not Done."""
    make_project(tmp_path, top_toml="isolation = true\n")
    mine = "def add(a, b):\n    return a + b  # my own fix, not committed yet\n"
    (tmp_path / "src" / "calc.py").write_text(mine)
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
    assert proc.returncode == 4, proc.stderr
    assert "■ WAITING FOR YOUR REVIEW on branch cardrunner/" in proc.stderr
    assert "■ DONE" not in proc.stderr
    assert (tmp_path / "src" / "calc.py").read_text() == mine, "the user's work is untouched"
    meta = front_matter(tmp_path / "cards" / "fix-add.md")
    assert meta["state"] == "Review"
    branch = proc.stderr.split("on branch ", 1)[1].split()[0]
    assert "return a + b" in git(tmp_path, "show", f"{branch}:src/calc.py")


@pytest.mark.parametrize("shape", ["detached", "shallow"])
def test_a_detached_head_or_a_shallow_clone_is_named_in_the_start_line(
    tmp_path: Path, shape: str
) -> None:
    origin = tmp_path / "origin"
    make_project(origin)
    git(origin, "commit", "-q", "--allow-empty", "-m", "a second commit")
    root = tmp_path / "work"
    if shape == "detached":
        git(tmp_path, "clone", "-q", str(origin), str(root))
        git(root, "checkout", "-q", "--detach", "HEAD")
        expected = f"HEAD detached at {git(root, 'rev-parse', 'HEAD')[:10]}"
    else:
        git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(root))
        expected = "a shallow clone"
    with FakeMessagesAPI(fix_transcript()) as api:
        proc = cli(root, "run", "cards/fix-add.md", "--yes", env=api_env(api))
    start = next(line for line in proc.stderr.splitlines() if line.startswith("▶ "))
    assert expected in start, proc.stderr


TAMPERING = """import pathlib

_TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "test_calc.py"
_TESTS.write_text("def test_one():\\n    assert True\\n\\n\\ndef test_two():\\n    assert True\\n")


def add(a, b):
    return a - b
"""
"""The model's code, imported by the tests, rewrites the test file (outside the write area) into
two tests that assert nothing, and leaves `add` broken."""


def test_code_that_rewrites_the_tests_outside_the_write_area_never_ends_done(
    tmp_path: Path,
) -> None:
    make_project(tmp_path)
    steps = [
        turn(use("write_file", path="src/calc.py", content=TAMPERING)),
        turn(use("run_tests", "toolu_first")),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, "2 passed", ("toolu_tests", "2 passed")),
            report(2, "2 passed", ("toolu_tests", "Tests succeeded.")),
        ),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nDone.")),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nAgain.")),
        final(),
    ]
    with FakeMessagesAPI(steps) as api:
        proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", env=api_env(api))
    assert proc.returncode == 1, proc.stderr
    assert "■ DONE" not in proc.stderr
    commits = [
        str(r["data"]["result"])
        for r in log_records(tmp_path)
        if r["type"] == "tool" and r["data"].get("name") == "git_commit"
    ]
    assert "changed files outside the write area (tests/test_calc.py)" in commits[0], commits
    assert "no longer count as evidence" in commits[0]
    assert (tmp_path / "tests" / "test_calc.py").read_text() == TEST, "put back as it was"
