"""Every reader is bounded: `log`, `transcript`, `plan` and `check` through the real CLI on FIFOs,
devices, looping links and edited logs: one clear line on stderr, never a hang or a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.project import cli, fix_transcript, git, make_project, write_transcript


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project with one real run's log (the fix of fix-add, replayed)."""
    root = tmp_path_factory.mktemp("bounded") / "w"
    root.mkdir()
    make_project(root)
    transcript = write_transcript(root.parent / "fix.json", fix_transcript())
    proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    assert proc.returncode == 0, proc.stderr
    [log] = (root / ".cardrunner" / "runs").glob("*.jsonl")
    return root, log


def refused(proc: Any, why: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and why in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("verb", ["log", "transcript"])
def test_a_fifo_a_device_and_a_looping_link_are_refused_at_once(
    ran: tuple[Path, Path], tmp_path: Path, verb: str
) -> None:
    root, _ = ran
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)  # nobody ever writes: a plain open() would wait forever
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    refused(cli(root, verb, str(fifo), timeout=20), "is a FIFO")
    refused(cli(root, verb, "/dev/zero", timeout=20), "is a device file")
    refused(cli(root, verb, str(loop), timeout=20), "Too many levels of symbolic links")


EDITS = {
    "round number": lambda r: r["data"].update(round="seven") if r["type"] == "round" else None,
    "content": lambda r: r["data"].update(content=[1, 2]) if r["type"] == "round" else None,
    "usage": lambda r: r["data"].update(input_tokens="lots") if r["type"] == "round" else None,
    "data": lambda r: r.update(data=["not", "a", "mapping"]) if r["type"] == "tool" else None,
    "result": lambda r: r["data"].update(rounds="x") if r["type"] == "result" else None,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_log_gives_one_clear_line_or_a_summary(
    ran: tuple[Path, Path], tmp_path: Path, edit: str
) -> None:
    root, log = ran
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for record in records:
        EDITS[edit](record)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in records))
    for verb in ("log", "transcript"):
        proc = cli(root, verb, str(edited), timeout=60)
        assert "Traceback" not in proc.stderr, (verb, proc.stderr)
        if proc.returncode == 2:
            assert len(proc.stderr.strip().splitlines()) == 1 and "damaged" in proc.stderr
        else:
            assert proc.returncode == 0 and proc.stdout, (verb, proc.stderr)


def test_a_looping_link_and_a_fifo_in_cards_do_not_stop_plan_or_check(
    ran: tuple[Path, Path], tmp_path: Path
) -> None:
    root = tmp_path / "w"
    root.mkdir()
    make_project(root)
    (root / "cards" / "loop.md").symlink_to("loop.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a link that points at itself")
    os.mkfifo(root / "cards" / "pipe.md")
    plan = cli(root, "plan", timeout=60)
    assert plan.returncode == 0 and "Traceback" not in plan.stderr, plan.stderr
    skipped = {s["card"]: s["why"] for s in json.loads(plan.stdout)["skipped"]}
    assert "Too many levels of symbolic links" in skipped["cards/loop.md"]
    assert "is a FIFO" in skipped["cards/pipe.md"]
    assert [e["card"] for e in json.loads(plan.stdout)["include"]] == ["cards/fix-add.md"]
    check = cli(root, "check", timeout=60)
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stderr
    assert (
        "cards/loop.md: cannot read:" in check.stdout
        and "cards/pipe.md: cannot read:" in check.stdout
    )
