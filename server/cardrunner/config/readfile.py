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


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path`; NotRegularFile or FileTooLarge otherwise.

    FileNotFoundError and the other OSErrors of `open` pass through unchanged.
    """
    mode = os.stat(path).st_mode  # a socket cannot even be opened: say what it is
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{path} is {_kind(mode)}")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{path} is {_kind(info.st_mode)}")
        if info.st_size > limit:
            raise FileTooLarge(f"{path} has {info.st_size:,} bytes (the limit is {limit:,})")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileTooLarge(f"{path} grew past {limit:,} bytes while being read")
    return data
