"""Reading and parsing many cards in a child process, so that a big board costs the editor little.

Parsing a card (PyYAML's composer is pure Python) holds the GIL for ~0.2 ms; the first scan of
10,000 cards held the server's loop for 16–18 s, and a thread would only have moved the same
GIL time elsewhere in the same process. So a batch of more than `CHILD_MIN` cards is read by
`python -P -m cardrunner.lsp.core.cardscan`, at a lower priority (`NICENESS`), on the other
core when there is one free: it gets the paths on its stdin
and writes back, `BATCH` cards at a time, each card's text, its parse and what the file looked
like (`Seen`). The batches are pickled because unpickling a parsed card costs ~5 µs, some 35
times less than parsing it; they come from a child this process started with its own
interpreter and its own code, so they are as the process itself. `-P` keeps the
workspace (the child's working folder) off `sys.path`: a `yaml.py` in a repository must not run.

`Seen` is also what lets the watcher and the catch-up pass skip a card whose file did not change
since it was read (see `CardIndex.sync`): same mtime, ctime, size, inode and device — unless the
file was written so close to its read that a second write could have kept all of them
(`Seen.racy`), in which case the text is compared instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import struct
import sys
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from cardrunner.card.card import MAX_CARD_BYTES, Card, parse_card
from cardrunner.card.parse import CardProblem
from cardrunner.config.readfile import read_regular

log = logging.getLogger("cardrunner.lsp.cardscan")

MODULE = "cardrunner.lsp.core.cardscan"
CHILD_MIN = 256
"""More cards than this at once are read in the child; fewer cost the loop under ~40 ms in
all, one card at a time, which is less than starting a Python process costs the machine."""
BATCH = 16
"""Cards per message from the child: the loop installs one batch (~0.15 ms) between requests."""
RACY_NS = 2_000_000_000
"""A file changed less than this before it was read may change again unseen in the same
timestamp tick (1–2 s on some file systems, a clock tick on others): compare its text."""
NICENESS = 10
"""The child yields the cores to the editor's server (and the runs' workers do the same): on a
busy two-core machine, requests come before the scan. Measured: bench/RESULTS.md, Issue 15."""
_HEADER = struct.Struct(">Q")


@dataclass(frozen=True)
class Seen:
    """What a card's file looked like just before its text was read."""

    mtime_ns: int
    ctime_ns: int
    size: int
    ino: int
    dev: int
    read_at_ns: int
    """The wall clock when it was read (file times come from the same clock)."""

    @classmethod
    def of(cls, st: os.stat_result, read_at_ns: int) -> Seen:
        return cls(st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev, read_at_ns)

    def same_file(self, st: os.stat_result) -> bool:
        """The file still has the times, size and identity it had when read (a write, a
        rename over it or a `touch` changes at least its ctime, which nobody can set)."""
        return (self.mtime_ns, self.ctime_ns, self.size, self.ino, self.dev) == (
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_size,
            st.st_ino,
            st.st_dev,
        )

    def racy(self, margin_ns: int = RACY_NS) -> bool:
        """Changed so close to the read that an unseen second change could look the same (the
        ctime is the last change: a `touch` into the past makes a file racy too)."""
        return max(self.mtime_ns, self.ctime_ns) >= self.read_at_ns - margin_ns


@dataclass(frozen=True)
class Loaded:
    """One card as read from disk: `seen` None when it cannot be read (gone, a FIFO, too big);
    `parsed` None when whoever installs it must parse the text itself."""

    path: Path
    seen: Seen | None
    text: str | None
    parsed: tuple[Card | None, list[CardProblem]] | None = None


def read_card_file(path: Path) -> tuple[Seen, str]:
    """The file's `Seen` (taken before the read, so a write in between shows as a change) and
    its text; OSError when it cannot be read."""
    read_at = time.time_ns()
    st = os.stat(path)
    data = read_regular(path, MAX_CARD_BYTES)
    return Seen.of(st, read_at), data.decode("utf-8", errors="replace")


def load(path: Path, parse: bool) -> Loaded:
    try:
        seen, text = read_card_file(path)
    except OSError:
        return Loaded(path, None, None)
    return Loaded(path, seen, text, parse_card(text, path) if parse else None)


def load_many(paths: Sequence[Path], parse: bool) -> list[Loaded]:
    return [load(path, parse) for path in paths]


def list_card_files(folder: Path) -> list[Path]:
    """The files `find_cards` finds under `folder` (hidden folders and editor droppings left
    out, symlinked folders not entered), as resolved paths — but resolving only the symlinks
    and sorting names, not paths: resolving and sorting 10,000 `Path`s held the GIL for
    ~0.4 s, in the middle of the requests a big board's scan is meant to leave alone."""
    found: list[str] = []
    pending = [os.path.realpath(folder)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    _take(entry, found, pending)
        except OSError:
            continue  # gone or unreadable meanwhile: as `os.walk` does, leave it out
    found.sort()
    paths = [Path(p) for p in found]
    for path in paths:  # both are cached on the path: made here, in the thread, they do not
        hash(path), str(path)  # cost the loop ~50 ms at once (set operations, the pickle)
    return paths


def _take(entry: os.DirEntry[str], found: list[str], pending: list[str]) -> None:
    name = entry.name
    try:
        is_dir, is_link = entry.is_dir(), entry.is_symlink()
    except OSError:
        is_dir, is_link = False, False
    if is_dir:
        if not is_link and not name.startswith("."):
            pending.append(entry.path)
        return
    hidden = name.startswith((".", "#", "~")) or name.endswith(("~", "#"))
    if not hidden and name.lower().endswith((".md", ".markdown")):
        found.append(os.path.realpath(entry.path) if is_link else entry.path)


def stat_many(paths: Sequence[Path]) -> list[os.stat_result | None]:
    """One `stat` per path (None when it fails), for a thread: 10,000 take some 30 ms."""
    out: list[os.stat_result | None] = []
    for path in paths:
        try:
            out.append(os.stat(path))
        except OSError:
            out.append(None)
    return out


# --- the child ---------------------------------------------------------------------------------


def _frame(batch: list[Loaded]) -> bytes:
    """The batch pickled; a card whose parse cannot be pickled goes without it (parsed again
    by the server) rather than failing the batch."""
    try:
        data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        kept = []
        for item in batch:
            try:
                pickle.dumps(item)
                kept.append(item)
            except Exception:
                kept.append(replace(item, parsed=None))
        data = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def serve(source: BinaryIO, out: BinaryIO) -> None:
    """Read the pickled list of paths from `source`; write the cards, batch by batch."""
    paths = [Path(p) for p in pickle.load(source)]
    for start in range(0, len(paths), BATCH):
        out.write(_frame(load_many(paths[start : start + BATCH], parse=True)))
        out.flush()


# --- the server's side -------------------------------------------------------------------------


async def load_in_child(paths: Sequence[Path]) -> AsyncGenerator[list[Loaded], None]:
    """The cards at `paths`, read and parsed by a child process, as batches arrive. Stops early
    (the caller reads what is missing itself) when the child cannot start or dies; the child
    is killed when the caller stops listening."""
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",
            "-m",
            MODULE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 26,
        )
    except OSError as exc:
        log.warning("cannot start the card scanner (%r); reading the cards here", exc)
        return
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(proc.stderr.read())
    try:
        with contextlib.suppress(ConnectionError):
            proc.stdin.write(pickle.dumps([str(p) for p in paths]))
            await proc.stdin.drain()
            proc.stdin.close()
        while True:
            try:
                (length,) = _HEADER.unpack(await proc.stdout.readexactly(_HEADER.size))
                batch: list[Loaded] = pickle.loads(await proc.stdout.readexactly(length))
            except asyncio.IncompleteReadError:
                break  # the end (or the child died: the caller reads what is missing)
            except Exception as exc:
                log.warning("the card scanner sent what cannot be read (%r)", exc)
                break
            yield batch
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        code = await proc.wait()
        said = (await errors).decode(errors="replace").strip()
        if code != 0 and said:
            log.warning("the card scanner ended with %s: %s", code, said[-2000:])


if __name__ == "__main__":
    # Pickle by the module's own name, not `__main__`'s, so the server can read what it gets.
    from cardrunner.lsp.core import cardscan

    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    cardscan.serve(sys.stdin.buffer, sys.stdout.buffer)


def may_differ(seen: Seen | None, st: os.stat_result | None, racy_ns: int) -> bool:
    """Whether a file may read differently from what was read of it (`seen`): it is new, gone,
    or no longer looks as it did when read, or it was read too soon after a change to tell."""
    if seen is None or st is None:
        return True
    return not seen.same_file(st) or seen.racy(racy_ns)


def chunks(paths: Sequence[Path], size: int) -> list[Sequence[Path]]:
    """`paths` in slices of `size`."""
    return [paths[i : i + size] for i in range(0, len(paths), size)]
