"""Real published projects of four ecosystems through the real CLI (issue 23, "What it must show").

Each project is fetched from its registry at test time (tests/support/realprojects.py), put in a
fresh git repository with the cardrunner.toml docs/configuration.md gives for its ecosystem, and
tried with `cardrunner check --try`, then run with `cardrunner run CARD --replay T --yes`: a
harmless change ends Done with its tests counted; a change that deletes or skips a test is
blocked by the runner's count; and a worktree run (`isolation = true`) on an editable install
does not end Done when the change breaks the tests. One repository per test: each run commits.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.support.ecosystems import (
    BREAK_PYTHON,
    ECOSYSTEMS,
    GIVE_UP,
    RealProject,
    make_real_project,
)
from tests.support.project import git

COUNTS = {"python": 89, "rust": 46, "javascript": 3, "typescript": 5}
"""Tests that run on the untouched project (pytest's 14 skipped do not count)."""


def _state(project: RealProject) -> dict[str, object]:
    text = (project.root / project.card).read_text()
    return dict(yaml.safe_load(text.split("---")[1]))


def _log(project: RealProject) -> str:
    logs = sorted((project.root / ".cardrunner" / "runs").glob("*.jsonl"))
    assert logs, "no run log written"
    return logs[-1].read_text()


@pytest.mark.parametrize("key", list(ECOSYSTEMS))
def test_check_try_counts_the_tests_then_a_harmless_change_ends_done(
    key: str, tmp_path: Path
) -> None:
    project = make_real_project(key, tmp_path / key)
    tried = project.cli("check", "--try", ".")
    assert tried.returncode == 0, tried.stdout
    argv = " ".join(tomllib.loads(project.eco.toml)["commands"]["test"])
    assert f"try: test ({argv}): ok, {COUNTS[key]} tests ran" in tried.stdout
    assert "sandbox refused" not in tried.stdout
    assert git(project.root, "status", "--porcelain") == "", "the try left changes git sees"

    transcript = project.play("done", project.eco.done)
    proc = project.cli("run", project.card, "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert _state(project)["state"] == "Done"
    change = git(project.root, "log", "-1", "--format=%B", "HEAD~1")
    assert change.startswith(f"card: Document {project.eco.topic}")
    count = COUNTS[key]
    assert f"{count} ran ({count} at start)" in change, change
    assert git(project.root, "status", "--porcelain") == "", "the run left the tree dirty"


@pytest.mark.parametrize("key", list(ECOSYSTEMS))
def test_deleting_or_skipping_a_test_is_blocked(key: str, tmp_path: Path) -> None:
    project = make_real_project(key, tmp_path / key)
    transcript = project.play("drop", project.eco.drop, GIVE_UP)
    proc = project.cli("run", project.card, "--replay", str(transcript), "--yes")
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert _state(project)["state"] == "Failed"
    assert "fewer tests ran than at the start of the run" in _log(project)
    changed = git(project.root, "log", "--format=%s", "main")
    assert f"card: Document {project.eco.topic}\n" not in changed, "the drop was committed"


def test_a_worktree_run_on_an_editable_install_is_not_done_when_it_breaks_the_tests(
    tmp_path: Path,
) -> None:
    project = make_real_project("python", tmp_path / "python", extra_toml="isolation = true\n")
    transcript = project.play("break", BREAK_PYTHON, GIVE_UP)
    proc = project.cli("run", project.card, "--replay", str(transcript), "--yes")
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert _state(project)["state"] == "Failed"
    source = (project.root / BREAK_PYTHON.path).read_text()
    assert BREAK_PYTHON.new not in source, "the breaking change reached the checkout"
    records = [json.loads(line) for line in _log(project).splitlines()]
    commit_checks = [
        r["data"] for r in records if r["type"] == "checks" and r["data"]["phase"] == "commit"
    ]
    assert commit_checks and not commit_checks[-1]["ok"], "the runner's tests passed on it"
