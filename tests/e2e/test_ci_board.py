"""A board on CI, as its jobs do it, for real: plan, then each card on its own pushed branch.

A repository with a bare remote (a local path); every job works in a fresh clone, as a CI
runner does; the model is the real SDK talking to the fake Messages API. Only `gh pr create`
is not run here: the test checks the body it would be given.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.card.record import RunRecord
from cardrunner.git.branches import BranchRepo
from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.project import (
    cli,
    final,
    fix_transcript,
    git,
    make_project,
    report,
    slug_of,
    turn,
    use,
)

GREET = "def greet(name):\n    return 'Hallo ' + name\n"
GREETED = '"""Greetings for the user."""\n\n\ndef greet(name):\n    return "Hello " + name\n'
GREET_CARD = """---
title: Greet in English
state: New
category: Improvement
---
`src/greet.py` says Hallo.

**Acceptance criteria**

- `greet("Ada")` returns "Hello Ada".
- The build passes.
"""
SUBTRACT_CARD = """---
title: Subtracting is missing
state: New
category: Feature
---
`src/calc.py` has no `sub`.

**Acceptance criteria**

- `sub(5, 3)` returns 2.
"""
EVIDENCE = {
    "fix-add": ["add(2, 3) is 5 in the test", "1 passed"],
    "greet": ['greet("Ada") is "Hello Ada" in src/greet.py', "compileall exited 0"],
}


def greet_transcript() -> list[dict[str, Any]]:
    first, second = EVIDENCE["greet"]
    return [
        turn(use("read_file", path="src/greet.py")),
        turn(use("write_file", path="src/greet.py", content=GREETED)),
        turn(use("build_app", "toolu_build")),
        turn(
            use("read_file", "toolu_read_greet", path="src/greet.py"),
            report(1, first, ("toolu_read_greet", 'return "Hello " + name')),
            report(2, second, ("toolu_build", "Build succeeded.")),
        ),
        turn(use("git_commit", message="card: Greet in English\n\nHello instead of Hallo.")),
        final(),
    ]


def failing_transcript() -> list[dict[str, Any]]:
    return [
        turn(use("read_file", path="src/calc.py")),
        final("I cannot tell what sub should do with floats.\nRESULT: failed: unclear card"),
    ]


TRANSCRIPTS = {"fix-add": fix_transcript, "greet": greet_transcript}


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The bare remote, holding a project with three New cards."""
    seed = tmp_path / "seed"
    card = make_project(seed)
    card.write_text(card.read_text().replace("`add(2, 3)`", "In `src/calc.py`, `add(2, 3)`"))
    (seed / "src" / "greet.py").write_text(GREET)
    (seed / "cards" / "greet.md").write_text(GREET_CARD)
    (seed / "cards" / "subtract.md").write_text(SUBTRACT_CARD)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "two more cards")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def checkout(origin: Path, where: Path) -> Path:
    """A fresh clone, as each CI job starts with."""
    git(origin.parent, "clone", "-q", str(origin), str(where))
    return where


def api_env(api: FakeMessagesAPI) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test-ci"}


def meta(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text.split("---")[1])
    assert isinstance(data, dict)
    return data


def test_plan_flags_cards_naming_the_same_file_and_keeps_the_board_budget(
    origin: Path, tmp_path: Path
) -> None:
    job = checkout(origin, tmp_path / "plan-job")
    every = cli(job, "plan")
    assert every.returncode == 0, every.stderr
    plan = json.loads(every.stdout)
    assert [e["slug"] for e in plan["include"]] == [
        slug_of(f"cards/{n}.md") for n in ("fix-add", "greet", "subtract")
    ]
    assert plan["conflicts"] == [
        {"cards": ["cards/fix-add.md", "cards/subtract.md"], "files": ["src/calc.py"]}
    ]
    assert "cards/fix-add.md and cards/subtract.md both touch src/calc.py" in every.stderr
    board = cli(job, "plan", "--budget-usd", "2", "--max-cost", "1")
    assert board.returncode == 0, board.stderr
    scheduled = json.loads(board.stdout)
    assert [e["slug"] for e in scheduled["include"]] == [
        slug_of("cards/fix-add.md"),
        slug_of("cards/greet.md"),
    ]
    assert scheduled["include"][1] == {
        "card": "cards/greet.md",
        "slug": slug_of("cards/greet.md"),
        "branch": f"cards/{slug_of('cards/greet.md')}",
        "title": "Greet in English",
        "budget": {"max_rounds": 30, "max_tokens": 400000, "max_cost_usd": 1.0},
        "needs": [],
        "stage": 0,
        "package": None,
    }
    assert scheduled["conflicts"] == []
    assert scheduled["skipped"] == [
        {"card": "cards/subtract.md", "why": "the board budget of $2.00 is reached"}
    ]
    # without --max-cost each card is budgeted at the default cap ($2.00): one card fits
    default = cli(job, "plan", "--budget-usd", "2")
    assert default.returncode == 0, default.stderr
    assert [e["slug"] for e in json.loads(default.stdout)["include"]] == [
        slug_of("cards/fix-add.md")
    ]


def test_each_planned_card_lands_as_one_pushed_commit_with_a_pr_body(
    origin: Path, tmp_path: Path
) -> None:
    plan = json.loads(
        cli(checkout(origin, tmp_path / "plan-job"), "plan", "--max-cost", "1").stdout
    )
    jobs = [e for e in plan["include"] if Path(e["card"]).stem in TRANSCRIPTS]
    assert len(jobs) == 2
    for entry in jobs:
        slug, name = entry["slug"], Path(entry["card"]).stem
        job = checkout(origin, tmp_path / f"job-{name}")
        body_file = tmp_path / f"pr-{name}.md"
        with FakeMessagesAPI(TRANSCRIPTS[name]()) as api:
            proc = cli(
                job, "run", entry["card"], "--ci", "--remote", "origin",
                "--pr-body", str(body_file),
                "--max-cost", str(entry["budget"]["max_cost_usd"]),
                env=api_env(api),
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            api.assert_complete()
        assert f"pushed {entry['branch']}" in proc.stderr
        branch = entry["branch"]
        # one commit on the remote's branch, holding the change and the card's new state
        assert git(origin, "rev-list", "--count", f"main..{branch}").strip() == "1"
        files = git(origin, "show", "--name-only", "--format=", branch).split()
        source = "src/calc.py" if name == "fix-add" else "src/greet.py"
        assert sorted(files) == sorted([entry["card"], source])
        card = meta(git(origin, "show", f"{branch}:{entry['card']}"))
        assert card["state"] == "Done"
        assert card["last_run"]["result"] == "done" and "commit" not in card["last_run"]
        message = git(origin, "log", "-1", "--format=%B", branch)
        assert message.startswith(f"card: {entry['title']}")
        assert f"Card: {slug}" in message and "Run: " in message
        # read in the job's checkout: git works in a bare repository only when told so
        [record] = asyncio.run(BranchRepo(job).card_runs(slug, branch))
        assert record == RunRecord.read(card["last_run"])  # the history is in git too
        for evidence in EVIDENCE[name]:
            assert evidence in message
        assert git(origin, "rev-parse", "main") == git(job, "rev-parse", "HEAD")
        assert git(job, "status", "--porcelain") == ""  # back on main, nothing left over
        body = body_file.read_text()
        assert body.startswith(f"## {entry['title']}\n")
        for number, evidence in enumerate(EVIDENCE[name], 1):
            assert f"✅ **{number}.**" in body and f"evidence: {evidence}" in body
        rounds = 7 if name == "fix-add" else 6
        assert f"| Done | {rounds} |" in body and "review happens on this pull request" in body
        log = body.split("Run log: `")[1].split("`")[0]
        assert (job / log).is_file()
    assert "cards/subtract" not in git(origin, "branch", "--list", "cards/*")


def test_a_failed_card_pushes_nothing_and_says_why(origin: Path, tmp_path: Path) -> None:
    job = checkout(origin, tmp_path / "job-subtract")
    body_file = tmp_path / "pr-subtract.md"
    with FakeMessagesAPI(failing_transcript()) as api:
        proc = cli(
            job, "run", "cards/subtract.md", "--ci", "--pr-body", str(body_file),
            env=api_env(api),
        )  # fmt: skip
        api.assert_complete()
    assert proc.returncode == 1, proc.stderr
    assert "nothing was pushed: the card ended Failed (model_failed): unclear card" in proc.stderr
    assert git(origin, "branch", "--list", "cards/*") == ""
    assert git(job, "branch", "--list", "cards/*") == ""  # the empty branch is gone
    assert git(job, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert meta((job / "cards/subtract.md").read_text())["state"] == "Failed"  # as a local run
    assert git(job, "rev-parse", "HEAD") == git(origin, "rev-parse", "main")  # nothing committed
    body = body_file.read_text()
    assert "— not pushed" in body.splitlines()[0]
    assert "**Nothing was pushed:** the card ended Failed (model_failed)" in body
    assert "⏳ **1.** `sub(5, 3)` returns 2." in body and "evidence: none reported" in body


def test_a_card_whose_branch_is_on_the_remote_already_is_refused(
    origin: Path, tmp_path: Path
) -> None:
    first = checkout(origin, tmp_path / "first")
    with FakeMessagesAPI(fix_transcript()) as api:
        done = cli(first, "run", "cards/fix-add.md", "--ci", env=api_env(api))
        assert done.returncode == 0, done.stderr
    again = checkout(origin, tmp_path / "again")
    with FakeMessagesAPI([]) as api:
        proc = cli(again, "run", "cards/fix-add.md", "--ci", env=api_env(api))
        assert api.requests == []  # refused before any money is spent
    assert proc.returncode == 2
    assert f"origin has a branch cards/{slug_of('cards/fix-add.md')} already" in proc.stderr
    assert git(again, "status", "--porcelain") == ""  # the card untouched, as a refused run's
    assert not list((again / ".cardrunner").glob("runs/*.jsonl"))  # refused before any log
    for flag, value in (("--pr-body", "x.md"), ("--remote", "origin")):
        wrong = cli(again, "run", "cards/fix-add.md", "--yes", flag, value)
        assert wrong.returncode == 2 and "only go with --ci" in wrong.stderr


@pytest.mark.parametrize("change", ["edited", "new"])
def test_uncommitted_work_on_the_card_is_refused_and_stays(
    origin: Path, tmp_path: Path, change: str
) -> None:
    job = checkout(origin, tmp_path / "job")
    card = job / "cards" / ("fix-add.md" if change == "edited" else "brand-new.md")
    text = (job / "cards" / "fix-add.md").read_text() + "\nA note I have not committed.\n"
    card.write_text(text)
    with FakeMessagesAPI([]) as api:
        proc = cli(job, "run", str(card.relative_to(job)), "--ci", env=api_env(api))
        assert api.requests == []  # refused before any money is spent
    assert proc.returncode == 2, proc.stderr
    assert "has changes that are not committed" in proc.stderr and "Traceback" not in proc.stderr
    assert card.read_text() == text  # the user's work is where it was
    assert git(origin, "branch", "--list", "cards/*") == ""
    assert git(job, "branch", "--list", "cards/*") == ""
    assert git(job, "symbolic-ref", "--short", "HEAD").strip() == "main"
