"""One run per card, across processes: the CLI and the editor refuse a card that is running."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from cardrunner.record.log import new_run_id
from cardrunner.run.liveness import CardBusy, CardLock
from tests.support.lsp import processes_with
from tests.support.project import cli, final, make_project, slow_tests, start_cli, write_transcript

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from cardrunner.run.liveness import CardLock
    lock = CardLock.acquire(Path(sys.argv[1]), Path("cards/fix-add.md"), "run-elsewhere")
    print("held", flush=True)
    time.sleep(300)
    """
)


def holder(root: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_lock_held_by_another_process_refuses_and_a_dead_owner_is_taken_over(
    tmp_path: Path,
) -> None:
    other = holder(tmp_path)
    try:
        try:
            CardLock.acquire(tmp_path, Path("cards/fix-add.md"), "mine")
            raise AssertionError("a second holder got the lock")
        except CardBusy as exc:
            assert f"run run-elsewhere in process {other.pid}" in str(exc)
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait(10)
    lock = CardLock.acquire(tmp_path, Path("cards/fix-add.md"), "mine")  # the dead owner's is free
    lock.release()
    CardLock.acquire(tmp_path, Path("cards/fix-add.md"), "again").release()


def test_run_ids_started_in_the_same_second_never_clash(tmp_path: Path) -> None:
    ids = {new_run_id(tmp_path, tmp_path / "cards" / "fix-add.md") for _ in range(2000)}
    assert len(ids) == 2000


def test_a_second_cli_run_of_a_running_card_is_refused(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    marker = f"one-run-{tmp_path.name}"
    transcript = slow_tests(tmp_path, marker)
    first = start_cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    try:
        deadline = time.monotonic() + 60
        while not processes_with(marker):
            assert time.monotonic() < deadline and first.poll() is None, "the tests never started"
            time.sleep(0.05)
        before = card.read_text()
        second = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
        assert second.returncode == 2, second.stdout + second.stderr
        assert "cards/fix-add.md is already running: run " in second.stderr
        assert card.read_text() == before and first.poll() is None  # the first run untouched
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    quick = write_transcript(tmp_path.parent / f"{tmp_path.name}-quick.json", [final()])
    again = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(quick), "--yes")
    assert "already running" not in again.stderr
