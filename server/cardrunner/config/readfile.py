"""Read a file without ever blocking on it: FIFOs, devices and sockets fail fast, size is bounded.

`open()` on a FIFO waits until someone opens the other end, and a thread stuck there cannot be
cancelled: a model that made a FIFO in its write area could hang `read_file` (and the process
exit after it). So files are opened non-blocking, checked with `fstat` on the open descriptor
(no window between a check and the open), and only regular files are read, up to a limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(OSError):
    """The path is a FIFO, a device, a socket or a folder: nothing a tool should read."""


class FileTooLarge(OSError):
    """The file is larger than the caller's limit."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """The regular file at `path` open for binary reading (blocking reads, as any file);
    NotRegularFile for anything else, decided on the open descriptor. For readers that stream
    a file (a run log) and count what they read themselves."""
    mode = os.stat(path).st_mode  # a socket cannot even be opened: say what it is
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{path} is {_kind(mode)}")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{path} is {_kind(info.st_mode)}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path`; NotRegularFile or FileTooLarge otherwise.

    FileNotFoundError and the other OSErrors of `open` pass through unchanged.
    """
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise FileTooLarge(f"{path} has {size:,} bytes (the limit is {limit:,})")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(f"{path} grew past {limit:,} bytes while being read")
    return data
