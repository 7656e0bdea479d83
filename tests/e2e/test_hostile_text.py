"""Model text, tool output and file contents reach the terminal without controls or secrets."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.project import (
    FIXED,
    cli,
    final,
    git,
    make_project,
    report,
    turn,
    use,
    write_transcript,
)

SECRET = "svc-secret-1234567890"


def test_the_cli_shows_controls_visibly_and_redacts_secrets_in_the_live_view(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    make_project(root)
    hidden = "# \x1b[2K\rlooks harmless\n"  # a text file: as Python, the lone CR breaks the build
    steps = [
        turn(
            use("write_file", path="src/calc.py", content=FIXED),
            use("write_file", path="src/notes.txt", content=hidden),
        ),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, f"\x1b[31mok\x1b[0m {SECRET}", ("toolu_tests", "Command: python -m pytest")),
            report(2, "1 passed\u202e", ("toolu_tests", "Command: python -m pytest")),
        ),
        turn(use("git_commit", message="card: fix\x1b[2K\n\nUse +.")),
        final(),
    ]
    transcript = write_transcript(tmp_path / "t.json", steps)
    env = {"PAYMENTS_SERVICE_TOKEN": SECRET}
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), env=env, stdin="y\n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "# \\x1b[2K\\rlooks harmless" in out  # the diff line, as it really is
    assert "\\x1b[31mok\\x1b[0m [redacted]" in out and SECRET not in out
    assert "1 passed\\u202e" in out
    assert (root / "src" / "notes.txt").read_bytes() == hidden.encode()  # the file is untouched
    assert "\x1b" not in git(root, "log", "-1", "--format=%B")


def test_a_fifo_in_the_write_area_fails_fast_and_the_cli_exits(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    os.mkfifo(root / "src" / "pipe.py")  # git does not see it: the write area counts as clean
    steps = [turn(use("read_file", path="src/pipe.py")), final("RESULT: failed: no input")]
    transcript = write_transcript(tmp_path / "t.json", steps)
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes", timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "is a FIFO (named pipe)" in proc.stderr
