"""A stranger's `.git/` and committed `.cardrunner/` files: no verb and no editor runs them.

Every payload touches a marker file (tests/support/hostile_git.py, whose control test proves
the payloads fire under plain git). The real CLI verbs and the real language server are driven
in the armed repository; the markers stay empty, a committed folder shaped like a bare
repository where an isolated run works is refused, and committed run logs and process ledgers
neither offer a Resume nor steer the sweep.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from cardrunner.processes.groups import boot_id, start_time
from cardrunner.run.liveness import interrupted_runs, sweep
from tests.support.hostile_git import arm, markers
from tests.support.lsp import Project, diag_codes, lens_titles, project_of
from tests.support.lsp import make_project as make_lsp_project
from tests.support.project import (
    cli,
    fix_transcript,
    git,
    make_project,
    slug_of,
    write_transcript,
)

NO_HOOKS = "\n[git]\nhooks = false\n"
"""The repository's own commit hooks are a separate, trusted step (docs/configuration.md)."""


def _armed_project(tmp_path: Path, top_toml: str = "") -> tuple[Path, Path]:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root, top_toml=top_toml, extra_toml=NO_HOOKS)
    return root, arm(root, tmp_path)


def test_read_only_verbs_run_nothing_of_the_repository(tmp_path: Path) -> None:
    root, folder = _armed_project(tmp_path)
    (root / "src" / "calc.py").write_text("# touched, so git must look at it\n")
    for verb in (["check"], ["plan"], ["log", "cards/fix-add.md"]):
        proc = cli(root, *verb)
        assert proc.returncode in (0, 1), (verb, proc.stderr)
    assert markers(folder) == []


@pytest.mark.parametrize("isolation", [False, True])
def test_a_run_to_done_runs_nothing_of_the_repository(tmp_path: Path, isolation: bool) -> None:
    root, folder = _armed_project(tmp_path, f"isolation = {str(isolation).lower()}\n")
    transcript = write_transcript(tmp_path / "fix.json", fix_transcript())
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "state: Done" in (root / "cards" / "fix-add.md").read_text()
    assert markers(folder) == []


def _bare_shaped(folder: Path, payload: Path) -> None:
    """A folder git would take for a repository of its own, with an fsmonitor of its own."""
    subprocess.run(["git", "init", "-q", "--bare", str(folder)], check=True)
    git(folder, "config", "core.bare", "false")
    git(folder, "config", "core.worktree", ".")
    git(folder, "config", "core.fsmonitor", f"{payload} bare-fsmonitor")
    for sub in ("objects", "refs", "hooks"):
        (folder / sub).mkdir(exist_ok=True)
        (folder / sub / ".keep").write_text("")


def test_a_committed_folder_where_worktrees_go_is_never_worked_in(tmp_path: Path) -> None:
    """A run's worktree is named by its run id, never by anything a clone can know in advance;
    a bare-shaped folder committed under `.cardrunner/worktrees/` is left alone (and one at a
    run's own place that git does not list is refused: `run/workarea.py`)."""
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root, top_toml="isolation = true\n", extra_toml=NO_HOOKS)
    trap = root / ".cardrunner" / "worktrees" / "fix-add"
    _bare_shaped(trap, tmp_path / "payload.sh")
    parked = root / ".cardrunner" / "worktrees" / f"parked-{slug_of('cards/fix-add.md')}"
    _bare_shaped(parked, tmp_path / "payload.sh")  # where the card's worktree is put aside
    git(root, "add", "-f", ".cardrunner")
    git(root, "commit", "-qm", "a folder where cardrunner keeps worktrees")
    folder = arm(root, tmp_path)
    transcript = write_transcript(tmp_path / "fix.json", fix_transcript())
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert markers(folder) == []
    assert (parked / "config").is_file(), "the committed folder was neither used nor replaced"
    subprocess.run(["git", "status"], cwd=trap, capture_output=True, check=False)
    assert markers(folder) == ["bare-fsmonitor"]  # the control: plain git in it runs the payload


def _orphan_log(root: Path, card: str) -> Path:
    log = root / ".cardrunner" / "runs" / "20260101-000000-x.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = {"type": "start", "data": {"card": card, "model": "m", "tools": [], "limits": {}}}
    log.write_text(json.dumps(start) + "\n")
    return log


def test_a_committed_run_log_is_no_interrupted_run(tmp_path: Path) -> None:
    make_project(tmp_path)
    _orphan_log(tmp_path, "cards/fix-add.md")
    assert interrupted_runs(tmp_path) == {"cards/fix-add.md": "20260101-000000-x"}  # control
    git(tmp_path, "add", "-f", ".cardrunner/runs")
    git(tmp_path, "commit", "-qm", "a run log")
    assert interrupted_runs(tmp_path) == {}


@pytest.fixture
def victim() -> Iterator[int]:
    """A process of the user's, leading its own group."""
    proc = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield proc.pid
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _ledger(root: Path, pgid: int, boot: str | None) -> Path:
    ledger = root / ".cardrunner" / "processes" / "999999999.jsonl"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    entry = {"pgid": pgid, "start": start_time(pgid), "boot": boot}
    ledger.write_text(json.dumps(entry) + "\n")
    return ledger


def test_a_ledger_from_another_boot_or_machine_kills_nothing(tmp_path: Path, victim: int) -> None:
    make_project(tmp_path)
    _ledger(tmp_path, victim, "another-machine")
    assert sweep(tmp_path) == []
    _ledger(tmp_path, victim, boot_id())
    assert sweep(tmp_path) == [victim]  # the control: a ledger of ours is swept


@pytest.fixture
def lsp_project(tmp_path: Path, victim: int) -> Project:
    """The editor's workspace, armed, with a committed run log and a committed ledger that
    names the user's process with its true start time and this machine's boot."""
    project = make_lsp_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    project.write_card("hello")
    _orphan_log(project.root, "cards/hello.md")
    _ledger(project.root, victim, boot_id())
    _bare_shaped(project.root / ".cardrunner" / "worktrees" / "hello", tmp_path / "payload.sh")
    git(project.root, "add", "-A")
    git(project.root, "add", "-f", ".cardrunner")
    git(project.root, "commit", "-qm", "cards and someone's state")
    arm(project.root, tmp_path)
    (project.root / "src" / "app.py").write_text("# changed\n")
    return project


async def test_the_editor_opening_the_folder_runs_nothing_and_offers_no_resume(
    client: LanguageClient, victim: int, tmp_path: Path
) -> None:
    project = project_of(client)
    uri = project.uri("hello")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while "▶ Run card" not in (found := await lens_titles(client, uri)):
        assert loop.time() < deadline, f"the card never got its lenses: {found}"
        await asyncio.sleep(0.05)  # until indexed: start-up has swept and read the logs
    assert "▶ Run card" in found and "Resume" not in found
    assert "interrupted" not in diag_codes(client, uri)
    assert start_time(victim) is not None, "the sweep killed the user's process"
    assert markers(tmp_path / "markers") == []
