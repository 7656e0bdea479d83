"""A card's identity is its path, through the real CLI: look-alike cards (one title under two
paths, scripts without ASCII letters, full-width and case forms) never share a branch, a history,
a plan footprint or an isolated run's worktree; each isolated run is its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.project import (
    cli,
    final,
    fix_transcript,
    git,
    make_project,
    slug_of,
    turn,
    use,
    write_transcript,
)

LOOK_ALIKES = [
    "cards/Addition Adds.md",
    "cards/sub/addition-adds.md",
    "cards/修复.md",
    "cards/добавить.md",
    "cards/ｍａｉｎ.md",
    "cards/main.md",
]


def add_look_alikes(root: Path) -> None:
    text = (root / "cards" / "fix-add.md").read_text()
    for rel in LOOK_ALIKES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "look-alike cards")


def test_look_alike_cards_have_their_own_branch_history_and_plan(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    make_project(root)
    add_look_alikes(root)
    fixing = write_transcript(tmp_path / "fix.json", fix_transcript())
    ran = cli(root, "run", LOOK_ALIKES[0], "--replay", str(fixing), "--yes")
    assert ran.returncode == 0, ran.stderr

    for rel in LOOK_ALIKES[1:]:  # none of them ever ran: the run of "Addition Adds" is not theirs
        shown = cli(root, "log", rel)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines() == [
            "Adding two numbers subtracts them — 0 runs, newest first"
        ]
    mine = cli(root, "log", LOOK_ALIKES[0]).stdout.splitlines()
    assert mine[0].endswith("— 1 run, newest first") and " · done · " in mine[1]

    plan = cli(root, "plan", "--state", "New")
    assert plan.returncode == 0, plan.stderr
    entries = json.loads(plan.stdout)["include"]
    assert {e["card"] for e in entries} == {"cards/fix-add.md", *LOOK_ALIKES[1:]}
    assert len({e["slug"] for e in entries}) == len({e["branch"] for e in entries}) == len(entries)
    # the run's history (src/calc.py) belongs to the card that ran, which is Done: no conflict
    assert json.loads(plan.stdout)["conflicts"] == [], plan.stdout


def test_a_look_alike_never_works_in_another_runs_worktree(tmp_path: Path) -> None:
    """The issue's case: a card stops (max_rounds) with an unreviewed file in its worktree, a
    card of the same file stem runs to Done, then the first one resumes and finds its work."""
    root = tmp_path / "w"
    root.mkdir()
    make_project(root, top_toml="isolation = true\n")
    (root / "cards" / "sub").mkdir()
    shutil.copy(root / "cards" / "fix-add.md", root / "cards" / "sub" / "fix-add.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a card of the same name")
    leftover = write_transcript(
        tmp_path / "leftover.json",
        [
            turn(use("write_file", path="src/unreviewed.py", content="DRAFT = 1\n")),
            turn(use("read_file", "toolu_draft", path="src/unreviewed.py")),
            final("RESULT: failed: the draft is as far as it goes"),
        ],
    )
    stopped = cli(
        root, "run", "cards/sub/fix-add.md", "--replay", str(leftover), "--max-rounds", "1"
    )
    assert stopped.returncode == 1, stopped.stderr
    assert "kept as the tree" in stopped.stderr
    assert "worktree was put aside for the card's next run" in stopped.stderr
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]

    fixing = write_transcript(tmp_path / "fix.json", fix_transcript())
    done = cli(root, "run", "cards/fix-add.md", "--replay", str(fixing), "--yes")
    assert done.returncode == 0, done.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD~1").split() == ["src/calc.py"]
    assert not (root / "src" / "unreviewed.py").exists()

    resumed = cli(
        root,
        "run",
        "cards/sub/fix-add.md",
        "--replay",
        str(leftover),
        "--resume",
        "--grant-rounds",
        "5",
    )
    assert resumed.returncode == 1, resumed.stderr
    [log] = [p for p in (root / ".cardrunner" / "runs").glob("*.jsonl") if "draft" in p.read_text()]
    reads = [
        json.loads(line)["data"]
        for line in log.read_text().splitlines()
        if '"toolu_draft"' in line and '"type":"tool"' in line.replace(" ", "")
    ]
    assert reads and not reads[-1]["is_error"] and "DRAFT = 1" in reads[-1]["result"], reads
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    parked = sorted(w.name for w in (root / ".cardrunner" / "worktrees").iterdir())
    assert parked == sorted(
        f"parked-{slug_of(c)}" for c in ("cards/fix-add.md", "cards/sub/fix-add.md")
    )
