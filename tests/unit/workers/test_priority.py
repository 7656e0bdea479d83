"""`run_priority`: each value's nice and policy, and `lower` on every thread of a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import get_args

import pytest

from cardrunner.config.settings import RunPriority
from cardrunner.workers.priority import PRIORITIES, Priority
from cardrunner.workers.program import NICENESS

CHILD = """
import json, os, sys, threading
from cardrunner.workers.priority import lower
os.nice(int(sys.argv[2]))
ready, done = threading.Event(), threading.Event()
tid = []
def other():
    tid.append(threading.get_native_id()); ready.set(); done.wait()
t = threading.Thread(target=other); t.start(); ready.wait()
lower(sys.argv[1])
ids = {"main": threading.get_native_id(), "thread": tid[0]}
print(json.dumps({k: [os.getpriority(os.PRIO_PROCESS, v), os.sched_getscheduler(v)]
                  for k, v in ids.items()}))
done.set()
"""


def test_the_values_map_to_nice_and_policy() -> None:
    assert set(PRIORITIES) == set(get_args(RunPriority))
    assert {
        "low": Priority(10, False),
        "lowest": Priority(19, False),
        "idle": Priority(19, True),
    } == PRIORITIES
    assert PRIORITIES["low"].nice == NICENESS  # every worker starts at the default


def lowered(name: str, start: int) -> dict[str, list[int]]:
    """Each thread's nice and policy in a process at nice `start` after `lower(name)`."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(start)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, list[int]] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread priority and SCHED_IDLE")
def test_lower_reaches_threads_that_already_run() -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert base < 19, "the tests must not themselves run at nice 19"
    out = lowered("idle", 0)
    assert out == {"main": [19, os.SCHED_IDLE], "thread": [19, os.SCHED_IDLE]}
    out = lowered("lowest", 0)
    assert out == {"main": [19, os.SCHED_OTHER], "thread": [19, os.SCHED_OTHER]}


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread priority")
def test_lower_never_raises_a_priority() -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    start = min(15, 19 - base)  # relative: the child ends at base + start, above nice 10
    if base + start <= 10:
        pytest.skip("the test process is too far below nice 10 to tell")
    out = lowered("low", start)
    assert out == {"main": [base + start, os.SCHED_OTHER], "thread": [base + start, os.SCHED_OTHER]}
