"""Where a task waits: every frame of its chain of awaits, down to the future it waits on.

`Task.print_stack` shows only the task's own coroutine: for a run that is stuck in its
cleanup that is `_play`'s `async for`, and nothing of where the wait really is. This walks
the chain instead — coroutines, async generators (through their `asend` objects), tasks awaited
by other tasks — and ends at what holds it: a thread's future, a process, a lock.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import Iterator
from types import FrameType
from typing import Any

_MOST = 64
"""Links followed at most: a chain is never deeper, and a cycle must not hang the report."""


def _where(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    return f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_qualname}"


def _step(link: Any) -> tuple[str | None, Any]:
    """The report's line for `link` (where it is suspended, or the future at the bottom; None
    for a link with nothing to show) and what it waits on next."""
    if inspect.iscoroutine(link):
        return _where(link.cr_frame), link.cr_await
    if inspect.isasyncgen(link):
        return _where(link.ag_frame), link.ag_await
    if inspect.isgenerator(link):
        return _where(link.gi_frame), link.gi_yieldfrom
    if isinstance(link, asyncio.Task):
        return None, link.get_coro()
    if isinstance(link, asyncio.Future):
        return f"  waits on {link!r}", None
    # An `asend` of an async generator, or a future's iterator: their one referent of interest.
    inner = [r for r in gc.get_referents(link) if inspect.isasyncgen(r) or asyncio.isfuture(r)]
    return None, inner[0] if inner else None


def chain(task: asyncio.Task[Any]) -> Iterator[str]:
    """One line a frame, outermost first, then the future at the bottom if there is one."""
    link: Any = task
    for _ in range(_MOST):
        if link is None:
            return
        line, link = _step(link)
        if line is not None:
            yield line
