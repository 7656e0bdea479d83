"""`cardrunner check` tries the config: every mistake a run would only meet later is named.

Through the real CLI on a real git repository: programs that do not exist, a shell line in one
argument, folders that do not exist, a write area holding the cards and cardrunner.toml, a
missing replay transcript; and with `--try`, build and test run once under the sandbox, with
the tests counted and a refused write named with its fix — also at a run's start.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cardrunner.tools.guard import PathGuard
from tests.support.project import cli, final, git, init_repo, make_project, write_transcript

WRITES_OWN_CONFIG = [
    "python",
    "-c",
    "import os; open(os.path.abspath('cardrunner.toml'), 'a').close()",
]
"""A test command that appends nothing to cardrunner.toml: the sandbox must refuse it."""


def _configure(root: Path, paths: str, commands: str, top: str = "") -> None:
    (root / "cardrunner.toml").write_text(f"{top}[paths]\n{paths}\n[commands]\n{commands}\n")
    git(root, "commit", "-qam", "config")


def test_each_mistake_in_the_config_is_named(tmp_path: Path) -> None:
    make_project(tmp_path)
    _configure(
        tmp_path,
        'read = [".", "docs"]\nwrite = [".", "lib"]\n',
        'build = ["no-such-compiler-4711", "-q"]\ntest = ["npm test && npm run lint"]\n'
        'app = ["./run-app.sh"]\n',
        top='replay = "transcripts/"\n',
    )
    proc = cli(tmp_path, "check", ".")
    assert proc.returncode == 1, proc.stdout
    out = proc.stdout
    assert (
        "commands.build: the program 'no-such-compiler-4711' is not found on the run's PATH" in out
    )
    assert "commands.test: ['npm test && npm run lint'] is a shell line in one argument" in out
    assert "['npm', 'test']" in out, "the fix shows the argv to write"
    assert "commands.app: the program './run-app.sh' is not found in the repository" in out
    assert "paths.write: the folder 'lib' does not exist" in out
    assert "paths.read: the folder 'docs' does not exist" in out
    assert "paths.write: '.' lets the model change cards/ and cardrunner.toml and .mcp.json" in out
    assert "replay: 'transcripts/' does not exist" in out


def test_a_good_config_has_no_problems_and_try_counts_the_tests(tmp_path: Path) -> None:
    make_project(tmp_path)
    assert cli(tmp_path, "check", ".").stdout.endswith("no problems found\n")
    proc = cli(tmp_path, "check", "--try", ".")
    assert proc.returncode == 1, proc.stdout  # the project's one test fails: add is broken
    assert "try: build (python -m compileall -q src): ok" in proc.stdout
    assert (
        "try: test (python -m pytest -q -p no:cacheprovider tests): failed (exit 1)" in proc.stdout
    )
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(tmp_path, "commit", "-qam", "fix")
    fixed = cli(tmp_path, "check", "--try", ".")
    assert fixed.returncode == 0, fixed.stdout
    assert (
        "try: test (python -m pytest -q -p no:cacheprovider tests): ok, 1 tests ran" in fixed.stdout
    )
    assert git(tmp_path, "status", "--porcelain") == "", "check --try left changes git sees"


def test_try_names_a_write_the_sandbox_refused_with_its_fix(tmp_path: Path) -> None:
    make_project(tmp_path)
    _configure(tmp_path, 'write = ["src"]\n', f"test = {json.dumps(WRITES_OWN_CONFIG)}\n")
    proc = cli(tmp_path, "check", "--try", ".")
    assert proc.returncode == 1, proc.stdout
    refused = f"the sandbox refused a write to {tmp_path.resolve() / 'cardrunner.toml'}"
    assert f"try: test: {refused} (read-only file system)" in proc.stdout, proc.stdout
    assert "cardrunner.toml belongs to git or cardrunner and stays read-only" in proc.stdout


def test_a_run_names_the_refused_write_of_its_baseline(tmp_path: Path) -> None:
    make_project(tmp_path)
    _configure(tmp_path, 'write = ["src"]\n', f"test = {json.dumps(WRITES_OWN_CONFIG)}\n")
    transcript = write_transcript(tmp_path.parent / "give-up.json", [final("RESULT: failed: no")])
    proc = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    assert proc.returncode == 1, proc.stderr
    assert "the runner's test at the start: the sandbox refused a write to" in proc.stderr
    assert "cardrunner.toml belongs to git or cardrunner" in proc.stderr


def test_a_go_module_at_the_root_lists_its_files_and_check_agrees(tmp_path: Path) -> None:
    """A Go module keeps its code beside go.mod at the root, which cannot be the write area: it
    lists files, and `check` must agree with the runner that they exist (it said "the folder
    'version.go' does not exist")."""
    make_project(tmp_path)
    (tmp_path / "version.go").write_text('package calc\n\nconst Version = "1.0"\n')
    (tmp_path / "cmd").mkdir()
    (tmp_path / "cmd" / "main.go").write_text("package main\n")
    git(tmp_path, "add", ".")
    _configure(
        tmp_path,
        'read = ["."]\nwrite = ["version.go", "cmd", "src"]\n',
        'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n',
    )
    out = cli(tmp_path, "check", ".").stdout
    assert "does not exist" not in out, out
    guard = PathGuard(tmp_path, ["."], ["version.go", "cmd", "src"])  # the runner's fence
    assert guard.is_writable("version.go") and guard.is_writable("cmd/main.go")
    assert not guard.is_writable("go.mod") and not guard.is_writable("version.go.bak")
    _configure(tmp_path, 'write = ["gone.go", "src"]\n', 'test = ["python", "-m", "pytest"]\n')
    assert "paths.write: the folder 'gone.go' does not exist" in cli(tmp_path, "check", ".").stdout


def test_try_says_first_when_the_tests_cannot_be_counted(tmp_path: Path) -> None:
    make_project(tmp_path)
    custom = json.dumps(["python", "-c", "print('all fine, says the custom runner')"])
    _configure(tmp_path, 'write = ["src"]\n', f"test = {custom}\n")
    proc = cli(tmp_path, "check", "--try", ".")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(
        f"{tmp_path.name}: try: tests not counted (unknown runner output): "
        "a deleted test would not be noticed; name the runner in [commands] test_runner (one of "
    ), proc.stdout
    assert "ctest" in lines[0] and "test_report" in lines[0]
    assert "try: test (python -c" in proc.stdout and "ok, tests not counted" in proc.stdout


CARGO_AND_PYTEST = """print("5 passed in 0.01s")
print("test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out")
"""
"""A script whose output holds a line pytest prints and one cargo prints: guessed, both count."""


def test_the_config_names_the_runner_and_check_counts_by_it(tmp_path: Path) -> None:
    """`test_runner` chooses the one reader: behind a script, cargo's summary is counted and a
    line of another runner's is not; where the named runner's summary is missing, `--try` says
    first that the tests are not counted; a name cardrunner cannot read is refused, listing
    the ones it can."""
    make_project(tmp_path)
    (tmp_path / "runtests.py").write_text(CARGO_AND_PYTEST)
    git(tmp_path, "add", "runtests.py")
    script = json.dumps(["python", "runtests.py"])
    _configure(tmp_path, 'write = ["src"]\n', f"test = {script}\n")
    guessed = cli(tmp_path, "check", "--try", ".").stdout
    assert "ok, 8 tests ran" in guessed, guessed  # pytest's 5 and cargo's 3: guessed, summed
    assert f"{tmp_path.name}: tests counted from the summary the output shows" in guessed

    _configure(tmp_path, 'write = ["src"]\n', f'test = {script}\ntest_runner = "cargo"\n')
    named = cli(tmp_path, "check", "--try", ".")
    assert named.returncode == 0, named.stdout
    assert f"{tmp_path.name}: tests counted from cargo's summary (test_runner)" in named.stdout
    assert "ok, 3 tests ran" in named.stdout and "not counted" not in named.stdout

    _configure(tmp_path, 'write = ["src"]\n', f'test = {script}\ntest_runner = "go"\n')
    first = cli(tmp_path, "check", "--try", ".").stdout.splitlines()[0]
    assert first.startswith(
        f"{tmp_path.name}: try: tests not counted (no go summary in the output; "
        "test_runner = 'go'): a deleted test would not be noticed"
    ), first

    _configure(tmp_path, 'write = ["src"]\n', f'test = {script}\ntest_runner = "gotest"\n')
    refused = cli(tmp_path, "check", ".")
    assert refused.returncode == 1, refused.stdout
    [line] = [ln for ln in refused.stdout.splitlines() if "test_runner" in ln]
    assert "gotest" in line and all(f"'{n}'" in line for n in ("go", "ctest", "cargo")), line


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_try_counts_plain_go_test_by_adding_v(tmp_path: Path) -> None:
    """`go test ./...` names packages only; run by cardrunner it gets `-v` and each test counts."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "go.mod").write_text("module example.com/calc\n\ngo 1.19\n")
    (tmp_path / "calc.go").write_text("package calc\n\nfunc Add(a, b int) int { return a + b }\n")
    (tmp_path / "calc_test.go").write_text(
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {}\n\n'
        'func TestTable(t *testing.T) {\n\tt.Run("one", func(t *testing.T) {})\n}\n'
    )
    (tmp_path / "sub" / "sub.go").write_text("package sub\n")
    (tmp_path / "sub" / "sub_test.go").write_text(
        'package sub\n\nimport "testing"\n\nfunc TestSub(t *testing.T) {}\n'
    )
    (tmp_path / "cardrunner.toml").write_text(
        '[paths]\nwrite = ["calc.go"]\n[commands]\ntest = ["go", "test", "./..."]\n'
    )
    init_repo(tmp_path)
    proc = cli(tmp_path, "check", "--try", ".")
    assert "try: test (go test -v ./...): ok, 4 tests ran" in proc.stdout, proc.stdout
    assert "not counted" not in proc.stdout
