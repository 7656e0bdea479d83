"""The repository's own commit hooks hold for a run's commit, run in the sandbox by the runner.

Real repositories, the real CLI and a replayed model: a pre-commit hook that always fails keeps
the run from committing and its words reach the model; a commit-msg hook that checks a format
refuses the first message and passes the second, and what it adds to the message is kept; a
pre-commit hook that reads `git diff --cached` sees exactly the run's change; `[git] hooks =
false` skips them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.project import (
    cli,
    fix_transcript,
    git,
    log_records,
    make_project,
    write_transcript,
)


def _hook(root: Path, name: str, body: str) -> None:
    hook = root / ".git" / "hooks" / name
    hook.write_text("#!/bin/sh\n" + body)
    hook.chmod(0o755)


def _commit_results(root: Path) -> list[str]:
    return [
        str(r["data"]["result"])
        for r in log_records(root)
        if r["type"] == "tool" and r["data"].get("name") == "git_commit"
    ]


def _run(root: Path, tmp_path: Path, steps: list[dict[str, Any]]) -> int:
    transcript = write_transcript(tmp_path / "steps.json", steps)
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    return proc.returncode


def test_a_failing_pre_commit_hook_keeps_the_run_from_committing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root)
    head = git(root, "rev-parse", "HEAD").strip()
    _hook(root, "pre-commit", 'echo "lint: src/calc.py:2: E999 style is wrong" >&2\nexit 1\n')
    assert _run(root, tmp_path, fix_transcript()) != 0
    [result] = _commit_results(root)
    assert "pre-commit hook" in result and "E999 style is wrong" in result
    assert git(root, "log", "--format=%H", f"{head}..HEAD", "--", "src") == ""  # not committed


def test_hooks_false_skips_them(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root, extra_toml="\n[git]\nhooks = false\n")
    _hook(root, "pre-commit", "exit 1\n")
    assert _run(root, tmp_path, fix_transcript()) == 0
    assert "state: Done" in (root / "cards" / "fix-add.md").read_text()


def test_commit_msg_checks_the_format_and_pre_commit_sees_the_run_s_tree(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root)
    _hook(
        root,
        "pre-commit",
        "git diff --cached --name-only | grep -qx src/calc.py || exit 3\n"
        "git diff --cached | grep -q '^+    return a + b' || exit 4\n",
    )
    _hook(
        root,
        "commit-msg",
        "grep -q '^Refs: #[0-9]' \"$1\" || { echo \"commit-msg: add a 'Refs: #N' line\"; exit 1; }\n"
        'echo "Checked-by: commit-msg" >> "$1"\n',
    )
    steps = fix_transcript(commit_attempts=2)
    commits = [s for s in steps if json.dumps(s).count('"git_commit"')]
    second = commits[1]["content"][0]["input"]
    second["message"] += "\n\nRefs: #12"
    assert _run(root, tmp_path, steps) == 0
    first, accepted = _commit_results(root)
    assert "commit-msg hook" in first and "add a 'Refs: #N' line" in first
    assert accepted.startswith("Accepted and committed")
    message = git(root, "log", "-1", "--format=%B", "HEAD~1")
    assert "Refs: #12" in message and "Checked-by: commit-msg" in message


def test_a_hooks_folder_outside_the_repository_runs_as_git_would_run_it(tmp_path: Path) -> None:
    """`core.hooksPath` in a folder of its own (a team's secret scanner): the sandbox hides /tmp
    and the home, so the hook must be shown to it, read-only — its refusal reaches the model, and
    once it passes the run ends Done."""
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root)
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    hook = shared / "pre-commit"
    hook.write_text('#!/bin/sh\necho "scanner: found no secrets, but refusing once" >&2\nexit 1\n')
    hook.chmod(0o755)
    git(root, "config", "core.hooksPath", str(shared))
    assert _run(root, tmp_path, fix_transcript()) != 0
    [result] = _commit_results(root)
    assert "scanner: found no secrets, but refusing once" in result, result
    assert "No such file" not in result
    hook.write_text('#!/bin/sh\ntest -r "$GIT_INDEX_FILE" && echo "scanner: clean"\n')
    git(root, "checkout", "-q", "--", "src")
    assert _run(root, tmp_path, fix_transcript()) == 0
