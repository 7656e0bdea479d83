"""`cardrunner check`, and Ctrl-C during `cardrunner run`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .project import cli, final, git, make_project, turn, use, write_transcript


def test_check_prints_every_problem_with_its_line_and_exits_1(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "cards" / "broken.md").write_text("---\ntitle: x\nstate: Doing\n---\nno criteria\n")
    good = (tmp_path / "cardrunner.toml").read_text()
    (tmp_path / "cardrunner.toml").write_text(good + "[limits]\n")  # a table twice: invalid TOML
    proc = cli(tmp_path, "check", ".")
    assert proc.returncode == 1
    assert "cards/broken.md:3: error: unknown state 'Doing'" in proc.stdout
    assert "cards/broken.md:" in proc.stdout and "criteria" in proc.stdout
    assert "cardrunner.toml" in proc.stdout
    (tmp_path / "cards" / "broken.md").unlink()
    (tmp_path / "cardrunner.toml").write_text(good)
    clean = cli(tmp_path, "check", ".")
    assert clean.returncode == 0 and "no problems found" in clean.stdout, clean.stdout


def test_ctrl_c_cancels_cleanly(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    marker = f"ctrl-c-{os.getpid()}-{tmp_path.name}"
    toml.write_text(
        toml.read_text().replace(
            'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]',
            f'test = ["python", "-c", "import time; time.sleep(120)  # {marker}"]',
        )
    )
    git(tmp_path, "commit", "-qam", "slow tests")
    transcript = write_transcript(
        tmp_path.parent / f"{tmp_path.name}.json",
        [turn(use("run_tests")), final("RESULT: failed: slow")],
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cardrunner",
            "run",
            "cards/fix-add.md",
            "--replay",
            str(transcript),
            "--yes",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not sleeping(marker):
        assert time.monotonic() < deadline and proc.poll() is None, "the tests never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "cancelled" in err
    meta = yaml.safe_load(card.read_text().split("---")[1])
    assert (meta["state"], meta["reason"]) == ("Failed", "cancelled")
    deadline = time.monotonic() + 10
    while sleeping(marker):
        assert time.monotonic() < deadline, "the test command outlived the run"
        time.sleep(0.05)
    log = next((tmp_path / ".cardrunner/runs").glob("*.jsonl")).read_text().splitlines()
    assert '"type":"result"' in log[-1]


def sleeping(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False
