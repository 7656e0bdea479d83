"""An isolated run on a src/-layout package installed editable: the tests exercise the worktree.

`pip install -e .` writes the checkout's absolute `src` path into the virtualenv (a `.pth` file,
as setuptools does for a src/ layout; made here by hand, without network). A run in a worktree
whose change breaks the tests must not end Done, as it did when those tests imported the
checkout's untouched package. The same project's correct change ends Done, although the
runner's own `compileall` writes `.pyc` files git does not ignore and pytest writes its cache.
Through the real CLI, with bubblewrap for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from cardrunner.processes.bwrapprobe import probe
from tests.support.project import (
    cli,
    final,
    git,
    init_repo,
    log_records,
    turn,
    use,
    write_transcript,
)
from tests.support.project import report as cite

pytestmark = pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")

STATS = "def words(text):\n    return len(text.split())\n"
BROKEN = "def words(text):\n    return len(text)\n"
COUNTED = STATS + "\n\ndef lines(text):\n    return len(text.splitlines())\n"
TESTS = (
    "from textpkg.stats import words\n\n\n"
    "def test_words():\n    assert words('a b c') == 3\n\n\n"
    "def test_no_words():\n    assert words('') == 0\n"
)
CARD = """---
title: Count lines too
state: New
---
Add `lines(text)` next to `words`.

**Acceptance criteria**

- `lines` exists.
- The tests pass.
"""
TOML = """model = "claude-sonnet-5-5"
isolation = true
{top}
[paths]
read = ["."]
write = ["src"]

[commands]
build = ["python", "-m", "compileall", "-q", "src"]
test = [".venv/bin/python", "-m", "pytest", "-q", "tests"]
"""


def editable_project(root: Path, top: str = "") -> Path:
    """pyproject + src/textpkg + tests, `.venv` with the editable install's `.pth`; committed.
    `.gitignore` names only `.venv/`: `__pycache__` is not ignored, as in many projects."""
    (root / "src" / "textpkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "cards").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "textpkg"\nversion = "0.1"\n')
    (root / "src" / "textpkg" / "__init__.py").write_text("")
    (root / "src" / "textpkg" / "stats.py").write_text(STATS)
    (root / "tests" / "test_stats.py").write_text(TESTS)
    (root / "cards" / "count-lines.md").write_text(CARD)
    (root / "cardrunner.toml").write_text(TOML.format(top=top))
    (root / ".gitignore").write_text(".venv/\n")
    init_repo(root)
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "__editable__.textpkg-0.1.pth").write_text(f"{(root / 'src').resolve()}\n")
    (site / "_test_tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # pytest
    return root


def steps(content: str) -> list[dict[str, Any]]:
    return [
        turn(use("write_file", path="src/textpkg/stats.py", content=content)),
        turn(use("build_app", "toolu_build"), use("run_tests", "toolu_tests")),
        turn(
            cite(1, "lines is in stats.py", ("toolu_tests", "passed")),
            cite(2, "the tests pass", ("toolu_tests", "passed")),
        ),
        turn(use("git_commit", message="card: Count lines too\n\nAdd lines().")),
        final(),
        final(),
        final(),
    ]


def run(root: Path, tmp_path: Path, content: str) -> subprocess.CompletedProcess[str]:
    transcript = write_transcript(tmp_path / "t.json", steps(content))
    return cli(root, "run", "cards/count-lines.md", "--replay", str(transcript), "--yes")


def test_a_change_that_breaks_the_tests_in_the_worktree_is_not_done(tmp_path: Path) -> None:
    root = editable_project(tmp_path / "ws")
    head = git(root, "rev-parse", "HEAD")
    done = run(root, tmp_path, BROKEN)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    records = log_records(root)
    checks = [r["data"] for r in records if r["type"] == "checks"]
    baseline = checks[0]
    assert baseline["phase"] == "baseline" and baseline["ok"] and baseline["tests_ran"] == 2
    assert f"at the checkout's own path {root.resolve()}" in baseline["sees"]
    assert f"at the checkout's own path {root.resolve()}" in out, "the CLI says it too"
    commit_checks = [c for c in checks if c["phase"] == "commit"]
    assert commit_checks and not commit_checks[-1]["ok"], "the worktree's broken code was tested"
    assert "1 failed" in commit_checks[-1]["checks"][-1]["tail"]
    assert git(root, "rev-parse", "HEAD~1") == head, "no code was committed, only the card"
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["cards/count-lines.md"]
    card = (root / "cards" / "count-lines.md").read_text()
    assert "state: Failed" in card and "tests_failed" in card


def test_the_correct_change_ends_done_and_build_output_is_not_committed(tmp_path: Path) -> None:
    root = editable_project(tmp_path / "ws")
    done = run(root, tmp_path, COUNTED)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    committed = git(root, "show", "--name-only", "--format=", "HEAD~1").split()
    assert committed == ["src/textpkg/stats.py"], "no .pyc, no pytest cache"
    assert (root / "src" / "textpkg" / "stats.py").read_text() == COUNTED
    reviews = [r["data"] for r in log_records(root) if r["type"] == "review_request"]
    assert "build output left out of the diff and the commit" in reviews[-1]["diff"]


def test_without_the_sandbox_an_isolated_run_that_would_import_the_checkout_is_refused(
    tmp_path: Path,
) -> None:
    root = editable_project(tmp_path / "ws", top='sandbox = "off"')
    done = run(root, tmp_path, BROKEN)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "the tests would read outside the run's tree" in out
    assert "__editable__.textpkg-0.1.pth" in out and "isolation = false" in out


NODE_TESTS = (
    'const test = require("node:test");\nconst assert = require("node:assert");\n'
    'const { words } = require("../src/words.js");\n\n'
    'test("three words", () => assert.strictEqual(words("a b c"), 3));\n'
    'test("no words", () => assert.strictEqual(words(""), 0));\n'
)
NODE_WORDS = "exports.words = (text) => text.split(/\\s+/).filter(Boolean).length;\n"
NODE_TOML = """model = "claude-sonnet-5-5"
isolation = true

[paths]
read = ["."]
write = ["src"]

[commands]
test = ["node", "--test"]
"""


def test_an_isolated_runs_tests_never_find_the_worktree_a_second_time(tmp_path: Path) -> None:
    """`node --test` (like vitest and jest) walks dot folders: under the sandbox the checkout's
    `.cardrunner/worktrees/<run>` held the run's own tests again, so 2 tests counted 4."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "cards").mkdir()
    (root / "src" / "words.js").write_text(NODE_WORDS)
    (root / "test" / "words.test.js").write_text(NODE_TESTS)
    (root / "cards" / "count-lines.md").write_text(CARD)
    (root / "cardrunner.toml").write_text(NODE_TOML)
    init_repo(root)
    alone = subprocess.run(["node", "--test"], cwd=root, capture_output=True, text=True)
    assert "# pass 2" in alone.stdout, alone.stdout  # the project's own count
    content = NODE_WORDS + "exports.lines = (text) => text.split('\\n').length;\n"
    steps = [
        turn(use("write_file", path="src/words.js", content=content)),
        turn(use("run_tests", "toolu_tests")),
        turn(
            cite(1, "lines is in words.js", ("toolu_tests", "pass 2")),
            cite(2, "the tests pass", ("toolu_tests", "pass 2")),
        ),
        turn(use("git_commit", message="card: Count lines too\n\nAdd lines().")),
        final(),
        final(),
        final(),
    ]
    transcript = write_transcript(tmp_path / "t.json", steps)
    done = cli(root, "run", "cards/count-lines.md", "--replay", str(transcript), "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    checks = [r["data"] for r in log_records(root) if r["type"] == "checks"]
    assert [c["phase"] for c in checks] == ["baseline", "commit"]
    assert [c["tests_ran"] for c in checks] == [2, 2]
    tool = next(r["data"] for r in log_records(root) if r["data"].get("name") == "run_tests")
    assert "Counted by the runner: 2 tests ran, 2 passed" in json.dumps(tool)
