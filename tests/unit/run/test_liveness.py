"""Which runs were interrupted: the newest log of each card without a result and without a
live process; and the cancel message that makes a stop `interrupted` rather than `cancelled`."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from cardrunner.run.liveness import (
    interrupted_by,
    interrupted_runs,
    interruption,
    mark_live,
)


def log(root: Path, run_id: str, card: str, *, result: bool, age: float = 0.0) -> Path:
    folder = root / ".cardrunner" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"time": "t", "type": "start", "data": {"card": card, "run_id": run_id}}]
    lines += [{"time": "t", "type": "tool", "data": {"result": "x" * 20_000}}]  # a long line
    if result:
        lines.append({"time": "t", "type": "result", "data": {"status": "failed"}})
    path = folder / f"{run_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def test_the_newest_log_of_a_card_without_a_result_is_interrupted(tmp_path: Path) -> None:
    log(tmp_path, "r1", "cards/a.md", result=False, age=60)
    log(tmp_path, "r2", "cards/a.md", result=True)  # a later run of the same card finished
    log(tmp_path, "r3", "cards/b.md", result=True, age=60)
    log(tmp_path, "r4", "cards/b.md", result=False)
    log(tmp_path, "r5", "cards/c.md", result=False)
    torn = log(tmp_path, "r6", "cards/d.md", result=True)
    torn.write_text(torn.read_text()[:-20])  # a crash mid-write tore the result line
    assert interrupted_runs(tmp_path) == {
        "cards/b.md": "r4",
        "cards/c.md": "r5",
        "cards/d.md": "r6",
    }


def test_a_run_with_a_live_process_is_not_interrupted(tmp_path: Path) -> None:
    log(tmp_path, "r1", "cards/a.md", result=False)
    mark_live(tmp_path, "r1", "cards/a.md")  # this process: alive
    assert interrupted_runs(tmp_path) == {}


def test_no_runs_folder_no_interrupted_runs(tmp_path: Path) -> None:
    assert interrupted_runs(tmp_path) == {}


async def test_the_cancel_message_says_interrupted_and_why() -> None:
    async def sleeper() -> None:
        await asyncio.sleep(60)

    for message, expected in (
        (interruption("the editor exited"), "the editor exited"),
        (None, None),
    ):
        task = asyncio.ensure_future(sleeper())
        await asyncio.sleep(0)
        task.cancel(message)
        try:
            await task
        except asyncio.CancelledError as exc:
            assert interrupted_by(exc) == expected
