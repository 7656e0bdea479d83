"""A command starts in a session of its own, and so in an autogroup of its own: that group must
rank as low as the run that started it, or nice values inside it mean nothing to the editor."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cardrunner.processes.groups import autogroup_nice, has_autogroups

pytestmark = pytest.mark.skipif(not has_autogroups(), reason="this kernel has no autogroups")

STARTER = textwrap.dedent(
    """
    import asyncio, os, sys
    from pathlib import Path
    from cardrunner.processes.command import run_command
    from cardrunner.processes.groups import ProcessGroups

    os.nice(int(sys.argv[1]) - os.getpriority(os.PRIO_PROCESS, 0))
    probe = (
        "import os; from pathlib import Path; "
        "print(os.getpriority(os.PRIO_PROCESS, 0), os.getsid(0) == os.getpid(), "
        "Path('/proc/self/autogroup').read_text().split()[-1])"
    )
    result = asyncio.run(
        run_command([sys.executable, "-c", probe], Path.cwd(), 30, groups=ProcessGroups())
    )
    print(result.output.strip())
    """
)


def _probe(tmp_path: Path, nice: int) -> tuple[int, bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", STARTER, str(nice)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return int(out[0]), out[1] == "True", int(out[2])


@pytest.mark.parametrize("nice", [10, 19])
def test_a_command_of_a_lowered_run_has_its_own_autogroup_at_the_runs_nice(
    tmp_path: Path, nice: int
) -> None:
    own_nice, leader, group_nice = _probe(tmp_path, nice)
    assert (own_nice, leader) == (nice, True)
    assert group_nice == nice


def test_a_command_of_an_unlowered_process_keeps_the_default(tmp_path: Path) -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert _probe(tmp_path, base)[2] == (autogroup_nice(os.getpid()) or 0) or base == 0


def test_a_lowered_starter_in_the_default_group_still_lowers_its_childrens_new_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A starter in the boot-time default group (a service, a CI runner) reads its own autogroup
    file empty; the child's `setsid` still makes a group of its own at nice 0, so it must still
    be lowered."""
    from cardrunner.processes import groups as autogroup

    monkeypatch.setattr(autogroup, "autogroup_nice", lambda pid: None)
    monkeypatch.setattr(autogroup.os, "getpriority", lambda which, who: 10)
    assert autogroup.follow_priority() is not None
