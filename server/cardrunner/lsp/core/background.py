"""Work the server starts and does not await: each task is kept until it is done.

asyncio keeps only a weak reference to a task, so a task nobody holds may be collected before it
ends. Commands (which must answer at once, features/commands.py), document events and start-up
all spawn their longer work through here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_tasks: set[asyncio.Future[Any]] = set()


def spawn(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run `coro` in the background, keeping a strong reference until it is done; the task is
    returned for a caller that must later wait for it (a read that must see this write)."""
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task
