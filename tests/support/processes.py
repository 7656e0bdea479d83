"""Waiting for processes to end, for the leak checks of the MCP and UI server tests."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_gone(pids: list[int], alive: Callable[[int], bool], seconds: float = 15.0) -> list[int]:
    """The pids still `alive` after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left
