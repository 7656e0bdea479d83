"""One diagnostics store, keyed by (source, uri), published in one place.

Several things put diagnostics on the same file — the card parser, the run's criteria and
result, the build — and `publishDiagnostics` replaces *all* of a file's diagnostics at once.
Each producer therefore owns one source and only ever replaces its own entries; the store merges
the sources per file and publishes every changed file once per loop iteration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from lsprotocol import types

Publish = Callable[[str, list[types.Diagnostic]], None]

CARD = "card"
"""Parse problems and the 'interrupted' warning of a card."""
RUN = "run"
"""A run's round summary, criteria and result, on its card."""
BUILD = "build"
"""Build and test problems on the source files they name."""
REVIEW = "review"
"""Marks on the hunks a reviewer dropped, in the review's `.diff` document."""


class DiagnosticsStore:
    """Diagnostics by (source, uri); `set`/`clear` mark files dirty, one flush publishes them.

    Kept per file, then per source: a publish reads one file's sources, not every entry —
    a board of 10,000 cards with problems publishes in linear time."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._files: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._dirty: set[str] = set()
        self._scheduled = False

    def get(self, uri: str) -> list[types.Diagnostic]:
        """Everything currently shown on `uri`, in source order."""
        sources = self._files.get(uri, {})
        return [d for source in sorted(sources) for d in sources[source]]

    def uris(self, source: str) -> list[str]:
        return [u for u, sources in self._files.items() if source in sources]

    def set(self, source: str, uri: str, diagnostics: Sequence[types.Diagnostic]) -> None:
        sources = self._files.get(uri)
        new = list(diagnostics)
        if (sources or {}).get(source, []) == new:
            return
        if new:
            self._files.setdefault(uri, {})[source] = new
        elif sources is not None:
            sources.pop(source, None)
            if not sources:
                del self._files[uri]
        self._mark(uri)

    def clear(self, source: str, uri: str | None = None) -> None:
        """Clear one source on one file, or on every file when `uri` is None."""
        for file in [uri] if uri is not None else self.uris(source):
            sources = self._files.get(file)
            if sources is not None and source in sources:
                self.set(source, file, [])

    def clear_uri(self, uri: str) -> None:
        """Clear every source on one file (the file was deleted)."""
        self._files.pop(uri, None)
        self._mark(uri)

    def touch(self, uri: str) -> None:
        """Publish `uri` again even if nothing changed (a client that just opened it)."""
        self._mark(uri)

    def _mark(self, uri: str) -> None:
        self._dirty.add(uri)
        if self._scheduled:
            return
        self._scheduled = True
        try:
            asyncio.get_running_loop().call_soon(self.flush)
        except RuntimeError:
            self.flush()

    def flush(self) -> None:
        """Publish every changed file now (the one place diagnostics leave the server)."""
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for uri in sorted(dirty):
            self._publish(uri, self.get(uri))
