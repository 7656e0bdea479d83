"""One private network per run: a loopback the run's app, MCP servers, builds and tests share.

A sandbox that gives every command a network namespace of its own (`--unshare-net`) keeps the
model's code off the internet, but also keeps the app `start_app` started out of reach of the
browser an MCP server drives: each sees a loopback of its own. So a run makes one namespace
and every sandboxed command of the run joins it: they reach each other on `localhost`, nothing
outside reaches them, and they reach nothing outside (the namespace has only `lo`).

bubblewrap 0.8 cannot join a namespace (`--netns` is newer), so the namespace is made by a
short-lived holder, `bwrap --unshare-user --unshare-net` (bwrap brings `lo` up), whose user and
network namespaces we open by file descriptor as soon as its `--info-fd` names its child. The
descriptors, not the holder, keep the namespaces alive: the holder exits at once, so nothing of
it can outlive the run, and a reused pid can never lead a command into someone else's
namespace (we check the opened network namespace is the one bwrap reported). Each spawn then
runs `nsenter --net=/proc/<our pid>/fd/<n> -- bwrap …` (without `--unshare-net`); our own pid
cannot be reused while we spawn. Without root the user namespace is joined first (`--user=…`),
since only its owner may enter the network namespace; as root it is not, so files keep their
owners inside (a joined user namespace maps only our uid: a checkout owned by another user
would turn read-only and git would call it of dubious ownership).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from cardrunner.processes.groups import ProcessGroups

_WAIT = (sys.executable, "-I", "-S", "-c", "import os; os.read(0, 1)")
"""What the holder runs: wait for its stdin to close (our interpreter: PATH may hold no `head`)."""

HOLDER_SECONDS = 10.0
"""How long the holder may take to name its child (it takes ~10 ms)."""


class NetworkUnavailable(OSError):
    """The private network cannot be made here, or is closed; str() says why (an OSError: a
    spawn into a closed network fails as a command that cannot start)."""


@dataclass
class PrivateNetwork:
    """A run's network namespace, held by descriptors; `enter()` is the argv prefix that joins
    it. Close it at the run's end (the namespace goes with its last process)."""

    nsenter: str
    user_fd: int
    net_fd: int
    join_user: bool
    _closed: bool = field(default=False, init=False)

    @classmethod
    def open(
        cls, bwrap: str, groups: ProcessGroups, *, join_user: bool | None = None
    ) -> PrivateNetwork:
        """Make the namespace (blocking: call it off the event loop); `join_user` defaults to
        whether we lack root. Raises `NetworkUnavailable`."""
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise NetworkUnavailable("`nsenter` (util-linux) is not installed")
        user_fd, net_fd = _hold(bwrap, groups)
        join = os.geteuid() != 0 if join_user is None else join_user
        return cls(nsenter, user_fd, net_fd, join)

    def enter(self) -> list[str]:
        """The argv prefix that runs a command inside this network."""
        if self._closed:
            raise NetworkUnavailable("the run's private network is closed")
        me = os.getpid()
        user = [f"--user=/proc/{me}/fd/{self.user_fd}"] if self.join_user else []
        return [
            self.nsenter,
            "--preserve-credentials",
            *user,
            f"--net=/proc/{me}/fd/{self.net_fd}",
            "--",
        ]

    def close(self) -> None:
        """Let go of the namespace; safe to call any number of times."""
        if not self._closed:
            self._closed = True
            for fd in (self.user_fd, self.net_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)


def _hold(bwrap: str, groups: ProcessGroups) -> tuple[int, int]:
    """Start the holder, open its user and network namespaces, let it go: (user fd, net fd)."""
    info_r, info_w = os.pipe()
    hold_r, hold_w = os.pipe()  # the holder waits for this pipe's end, then exits
    argv = [bwrap, "--unshare-user", "--unshare-net", "--die-with-parent"]
    argv += ["--info-fd", str(info_w), "--ro-bind", "/", "/", "--", *_WAIT]
    try:
        proc = subprocess.Popen(
            argv, stdin=hold_r, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(info_w,), start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        for fd in (info_r, info_w, hold_r, hold_w):
            os.close(fd)
        raise NetworkUnavailable(f"{bwrap} did not start: {exc}") from exc
    groups.note(proc.pid)
    os.close(info_w)
    os.close(hold_r)
    try:
        info = _read_info(info_r)
        child = info.get("child-pid")
        if not isinstance(child, int):
            raise NetworkUnavailable(_said(proc, "bwrap named no child"))
        fds = _open_namespaces(child, info.get("net-namespace"))
    finally:
        os.close(info_r)
        os.close(hold_w)
        _reap(proc, groups)
    return fds


def _read_info(fd: int) -> dict[str, object]:
    """bwrap's `--info-fd` JSON, read until it parses (bwrap keeps the pipe open)."""
    data = b""
    deadline = time.monotonic() + HOLDER_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break  # a holder that neither speaks nor exits: given up on, killed by `_reap`
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            parsed = json.loads(data)
            return parsed if isinstance(parsed, dict) else {}
    return {}


def _open_namespaces(child: int, net_id: object) -> tuple[int, int]:
    """Open the child's user and network namespaces; the network one must be bwrap's."""
    try:
        user_fd = os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise NetworkUnavailable(f"the namespace holder went away: {exc}") from exc
    try:
        net_fd = os.open(f"/proc/{child}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        os.close(user_fd)
        raise NetworkUnavailable(f"the namespace holder went away: {exc}") from exc
    if os.fstat(net_fd).st_ino != net_id:
        os.close(user_fd)
        os.close(net_fd)
        raise NetworkUnavailable("the namespace holder's pid was reused before it was opened")
    return user_fd, net_fd


def _said(proc: subprocess.Popen[bytes], what: str) -> str:
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        _, err = proc.communicate(timeout=2)
        if err.strip():
            return f"{what}: {err.decode('utf-8', 'replace').strip()}"
    return what


def _reap(proc: subprocess.Popen[bytes], groups: ProcessGroups) -> None:
    """The holder exits once its pipe closes; kill its group if it does not."""
    try:
        proc.wait(timeout=HOLDER_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()
    groups.forget(proc.pid)
