"""The terminal review as a person answers it, through the real `cardrunner run` (a replay
transcript, the real tools, build, tests and git): drops and hand edits compose, a drop is told
as a drop, quoted names and CRLF files keep their bytes, and the re-check after a hand edit
builds and tests the tree that is committed, not the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.project import (
    final,
    git,
    log_records,
    make_project,
    report,
    turn,
    use,
    write_transcript,
)
from tests.support.terminal import TerminalRun

FILLER = "".join(f"\n\ndef f{n}():\n    return {n}\n" for n in range(4))
LONG = "# calculator: ads numbers\ndef add(a, b):\n    return a - b\n" + FILLER
PROPOSED = LONG.replace("a - b", "a + b") + 'print("debug")\n'
TYPO_FIXED = LONG.replace("ads", "adds").replace("a - b", "a + b")
DATA = "".join(f"row {n}\f\r\n" for n in range(20))
DATA_PROPOSED = DATA.replace("row 1\f", "row one\f").replace("row 18\f", "row eighteen\f")
NOTES = 'src/notes "v2".py'
ASK = "& commit? [y]es / [n]o / [d]rop hunks: "
AGAIN = "dropped hunk(s)? [y]es / [n]o / [d]rop hunks: "


def project(root: Path, **files: str) -> None:
    make_project(root)
    for name, text in files.items():
        (root / "src" / name).write_bytes(text.encode())
    git(root, "add", "-A")
    git(root, "commit", "-qm", "longer files", "--allow-empty")


def transcript(root: Path, writes: list[dict[str, object]], cite0: tuple[str, str]) -> str:
    """Write, test, read, report, commit; after the review test again and report again."""
    steps = [
        turn(*writes),
        turn(use("run_tests", "toolu_tests"), use("read_file", "toolu_read", path="src/calc.py")),
        turn(report(1, "add is +", cite0), report(2, "tests pass", ("toolu_tests", "1 passed"))),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +.")),
        turn(use("run_tests", "toolu_again")),
        turn(report(2, "tests pass", ("toolu_again", "1 passed"))),
        turn(report(1, "add is +", ("toolu_again", "1 passed"))),
        final(),
    ]
    path = write_transcript(root.parent / f"{root.name}-t.json", steps)
    return str(path)


def git_commit_result(root: Path) -> str:
    tools = [r["data"] for r in log_records(root) if r["type"] == "tool"]
    return next(str(t.get("result", "")) for t in tools if t.get("name") == "git_commit")


def test_a_dropped_hunk_and_a_later_hand_edit_commit_exactly_what_was_kept(tmp_path: Path) -> None:
    project(tmp_path, **{"calc.py": LONG})
    steps = transcript(
        tmp_path,
        [use("write_file", path="src/calc.py", content=PROPOSED)],
        ("toolu_read", "return a + b"),
    )
    run = TerminalRun(tmp_path, "run", "cards/fix-add.md", "--replay", steps)
    run.wait_for(ASK)
    run.answer("d")
    run.wait_for("Drop which hunks?")
    run.wait_for("2. src/calc.py hunk 2 (@@ -17,3 +17,4 @@, +1/-0)")
    run.answer("2")
    run.wait_for(AGAIN)
    (tmp_path / "src/calc.py").write_text(PROPOSED.replace("ads", "adds"))  # after the drop
    run.answer("y")
    run.wait_for("Why drop them?")
    run.answer("no debug prints")
    assert run.finish() == 0, run.output

    head = git(tmp_path, "rev-parse", "HEAD~1").strip()
    assert git(tmp_path, "show", f"{head}:src/calc.py") == TYPO_FIXED
    assert (tmp_path / "src/calc.py").read_text() == TYPO_FIXED
    message = git(tmp_path, "log", "-1", "--format=%B", head)
    assert "Dropped by the reviewer: src/calc.py hunk 2 (@@ -17,3 +17,4 @@, +1/-0)." in message
    assert "Reason: no debug prints" in message
    assert "The reviewer changed src/calc.py before accepting" in message
    result = git_commit_result(tmp_path)
    assert (
        "The reviewer dropped these changes (undone in the working tree, not committed): " in result
    )
    assert "src/calc.py hunk 2" in result and "Reason: no debug prints" in result
    assert "+# calculator: adds numbers" in result, "the hand edit is shown as a hand edit"
    phases = [r["data"]["phase"] for r in log_records(tmp_path) if r["type"] == "checks"]
    assert phases[-1] == "hand_edit", phases


def test_drops_of_a_quoted_name_and_a_crlf_hunk_keep_every_byte(tmp_path: Path) -> None:
    project(tmp_path, **{"data.txt": DATA})
    writes = [
        use("write_file", path="src/calc.py", content="def add(a, b):\n    return a + b\n"),
        use("write_file", path="src/data.txt", content=DATA_PROPOSED),
        use("write_file", path=NOTES, content="# scratch\n"),
    ]
    steps = transcript(tmp_path, writes, ("toolu_read", "return a + b"))
    run = TerminalRun(tmp_path, "run", "cards/fix-add.md", "--replay", steps)
    run.wait_for(ASK)
    run.answer("d")
    run.wait_for("Drop which hunks?")
    run.wait_for('4. "src/notes \\"v2\\".py" hunk 1')
    run.answer("3 4")
    run.wait_for(AGAIN)
    run.answer("y")
    run.wait_for("Why drop them?")
    run.answer("")
    assert run.finish() == 0, run.output

    head = git(tmp_path, "rev-parse", "HEAD~1").strip()
    kept = DATA.replace("row 1\f", "row one\f").encode()
    shown = subprocess.run(
        ["git", "show", f"{head}:src/data.txt"], cwd=tmp_path, capture_output=True
    )
    assert shown.stdout == kept
    assert (tmp_path / "src/data.txt").read_bytes() == kept
    files = git(tmp_path, "show", "--name-only", "--format=", "-z", head).split("\0")
    assert NOTES not in files and not (tmp_path / NOTES).exists()
    message = git(tmp_path, "log", "-1", "--format=%B", head)
    assert (
        'Dropped by the reviewer: src/data.txt hunk 2 (@@ -16,5 +16,5 @@, +1/-1); "src/notes \\"v2\\".py" hunk 1'
        in message
    )
    assert "reviewer changed" not in message, "a drop is not a hand edit"
    result = git_commit_result(tmp_path)
    assert "The evidence for criterion 2 is stale" in result, "the read of calc.py still holds"
    assert "reviewer changed" not in result


def test_a_file_the_reviewer_adds_is_committed_and_checked_with_the_rest(tmp_path: Path) -> None:
    project(tmp_path)
    writes = [use("write_file", path="src/calc.py", content="def add(a, b):\n    return a + b\n")]
    steps = transcript(tmp_path, writes, ("toolu_read", "return a + b"))
    run = TerminalRun(tmp_path, "run", "cards/fix-add.md", "--replay", steps)
    run.wait_for(ASK)
    (tmp_path / "src/helper.py").write_text("HELP = 1\n")
    (tmp_path / "src/__init__.py").write_text("from src.helper import HELP\n")
    run.answer("y")
    assert run.finish() == 0, run.output
    head = git(tmp_path, "rev-parse", "HEAD~1").strip()
    files = git(tmp_path, "show", "--name-only", "--format=", head).split()
    assert files == ["src/__init__.py", "src/calc.py", "src/helper.py"]
    assert "src/helper.py" in git(tmp_path, "log", "-1", "--format=%B", head)


def test_the_recheck_runs_on_the_committed_tree_not_the_working_tree(tmp_path: Path) -> None:
    """The reviewer's import needs a file outside the write area: the working tree's tests
    pass, the tree that would be committed fails — and nothing is committed."""
    project(tmp_path)
    writes = [use("write_file", path="src/calc.py", content="def add(a, b):\n    return a + b\n")]
    steps = [
        turn(*writes),
        turn(use("run_tests", "toolu_tests"), use("read_file", "toolu_read", path="src/calc.py")),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +.")),
        final("RESULT: failed: the reviewer's change needs a file I may not commit"),
    ]
    path = write_transcript(tmp_path.parent / f"{tmp_path.name}-t.json", steps)
    run = TerminalRun(tmp_path, "run", "cards/fix-add.md", "--replay", str(path))
    run.wait_for("& commit? [y]es / [n]o")
    (tmp_path / "outside.py").write_text("THING = 1\n")  # not in the write area (src)
    (tmp_path / "src/__init__.py").write_text("from outside import THING\n")
    run.answer("y")
    run.finish()
    assert git(tmp_path, "show", "HEAD:src/calc.py").endswith("a - b\n"), "nothing committed"
    checks = [r["data"] for r in log_records(tmp_path) if r["type"] == "checks"]
    assert checks[-1]["phase"] == "hand_edit" and not checks[-1]["ok"], checks[-1]
    result = git_commit_result(tmp_path)
    assert "changed src/__init__.py by hand) the runner's checks fail" in result, result


def test_a_nul_in_quoted_evidence_is_committed_escaped(tmp_path: Path) -> None:
    project(tmp_path)
    fix = "def add(a, b):\n    return a + b\n"
    loud = "def test_loud():\n    print('sum\\x00\\x1b[2Kok')\n"  # its output holds a NUL
    steps = [
        turn(use("write_file", path="src/calc.py", content=fix)),
        turn(use("write_file", path="src/test_loud.py", content=loud)),
        turn(use("run_tests", "toolu_tests", args=["-s", "src/test_loud.py"])),
        turn(
            report(1, "reads +", ("toolu_tests", "sum\x00\x1b[2Kok")),
            report(2, "tests pass", ("toolu_tests", "2 passed")),
        ),
        turn(use("git_commit", message="card: Adding two numbers subtracts them\n\nUse +.")),
        final(),
    ]
    path = write_transcript(tmp_path.parent / f"{tmp_path.name}-t.json", steps)
    run = TerminalRun(tmp_path, "run", "cards/fix-add.md", "--replay", str(path), "--yes")
    assert run.finish() == 0, run.output
    assert "Traceback" not in run.output
    message = git(tmp_path, "log", "-1", "--format=%B", "HEAD~1")
    assert "sum\\x00\\x1b[2Kok" in message, message
    assert "\x00" not in message and "\x1b" not in message
