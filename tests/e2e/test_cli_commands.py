"""`cardrunner check`, and Ctrl-C during `cardrunner run`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import yaml

from tests.support.lsp import processes_with
from tests.support.project import cli, make_project, slow_tests, start_cli


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
    marker = f"ctrl-c-{os.getpid()}-{tmp_path.name}"
    transcript = slow_tests(tmp_path, marker)
    proc = start_cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    deadline = time.monotonic() + 60
    while not processes_with(marker):
        assert time.monotonic() < deadline and proc.poll() is None, "the tests never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "cancelled" in err
    meta = yaml.safe_load(card.read_text().split("---")[1])
    assert (meta["state"], meta["reason"]) == ("Failed", "cancelled")
    deadline = time.monotonic() + 10
    while processes_with(marker):
        assert time.monotonic() < deadline, "the test command outlived the run"
        time.sleep(0.05)
    log = next((tmp_path / ".cardrunner/runs").glob("*.jsonl")).read_text().splitlines()
    assert '"type":"result"' in log[-1]
