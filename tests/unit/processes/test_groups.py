"""ProcessGroups: the run's ledger of process groups, with real processes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from cardrunner.processes.command import spawn
from cardrunner.processes.groups import ProcessGroups, group_alive, process_alive, start_time

SLEEP = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]


async def test_every_group_is_heard_of_and_close_ends_them(tmp_path: Path) -> None:
    groups, heard = ProcessGroups(), []
    groups.add_listener(heard.append)
    child = await spawn(SLEEP, tmp_path, groups=groups)
    async with asyncio.timeout(30):
        assert await child.stdout.readline() == b"up\n"
    assert heard == [child.pid] and groups.live() == {child.pid}
    assert process_alive(child.pid) and group_alive(child.pid) and start_time(child.pid)
    other = ProcessGroups()
    assert other.live() == set()  # one run's groups are not another's
    groups.close()
    async with asyncio.timeout(30):
        assert await child.wait() == -9
    assert groups.live() == set() and not group_alive(child.pid)


def test_a_listener_that_fails_does_not_stop_the_note() -> None:
    groups = ProcessGroups()

    def broken(pgid: int) -> None:
        raise OSError("disk full")

    groups.add_listener(broken)
    groups.note(999_999_999)  # no such group: noted, then forgotten as dead
    assert groups.live() == set()
    groups.close()
