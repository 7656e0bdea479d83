"""How the CLI ends: its exit statuses, its error lines, and an event loop no hung thread keeps alive.


A file tool runs in a worker thread; a thread blocked in the kernel (a FIFO opened elsewhere, a
dead network mount) cannot be cancelled. `asyncio.run` would wait for it forever when it shuts
the default executor down, and so would the interpreter at exit. The run's result is already
printed and recorded by then, so the CLI leaves: it waits briefly for the workers, and if one is
still busy it flushes its output and exits with the run's status.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where each verb registers its parser (`add_parser(sub)` in every verb module)."""

EXIT_DONE, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFIED, EXIT_WAITING = 0, 1, 2, 3, 4
"""0 Done on your branch (or printed), 1 Failed (or problems found), 2 usage or configuration,
3 verified only, 4 committed on a side branch that waits for your review (the card in Review)."""


def err(text: str) -> None:
    """One line for the user on stderr, where every verb writes what is not its output."""
    sys.stderr.write(text + "\n")


WORKER_PREFIX = "cardrunner-worker"
GRACE_SECONDS = 2.0


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel and drain tasks still pending, as `asyncio.run` does."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _busy_workers(grace: float) -> list[threading.Thread]:
    """Our worker threads still alive after `grace` seconds (idle ones exit at shutdown)."""
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread.name.startswith(WORKER_PREFIX):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX) and t.is_alive()]


def run_bounded(main: Coroutine[Any, Any, int], grace: float = GRACE_SECONDS) -> int:
    """`asyncio.run(main)`, except that a stuck worker thread cannot delay the exit."""
    executor = ThreadPoolExecutor(thread_name_prefix=WORKER_PREFIX)
    loop = asyncio.new_event_loop()
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    try:
        status = loop.run_until_complete(main)
    finally:
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            executor.shutdown(wait=False, cancel_futures=True)
    if _busy_workers(grace):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # the interpreter's exit would join the stuck thread forever
    return status
