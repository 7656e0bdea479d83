"""A small bounded cache keyed by exact text, for parses that are asked for again and again.

The language server parses a card for every code lens, hover, diagnostic pass, board refresh
and file-watcher event, and a write-back parses the text it starts from (usually just loaded)
and the text it produced (read again by whoever wrote it and by the watcher). The text is the
whole key: the same characters always parse to the same result, so nothing ever has to be
invalidated. Bounded twice, by entries and by the characters the keys hold, so a burst of huge
cards cannot grow the process; and locked, because write-backs run in worker threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TextCache(Generic[V]):
    """Least-recently-used results of one function of a text; `misses` counts real work."""

    def __init__(self, max_entries: int, max_chars: int) -> None:
        self.max_entries, self.max_chars = max_entries, max_chars
        self._items: OrderedDict[str, V] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str, compute: Callable[[str], V]) -> V:
        """`compute(text)`, from the cache when this exact text was computed before.

        An exception from `compute` passes through and nothing is stored. `compute` runs outside
        the lock: two threads asking for the same new text may both compute it, which is cheaper
        than serialising every parse."""
        with self._lock:
            if text in self._items:
                self._items.move_to_end(text)
                self.hits += 1
                return self._items[text]
            self.misses += 1
        value = compute(text)
        if len(text) > self.max_chars:
            return value  # would evict everything else and still not fit
        with self._lock:
            if text not in self._items:
                self._items[text] = value
                self._chars += len(text)
            while len(self._items) > self.max_entries or self._chars > self.max_chars:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0
