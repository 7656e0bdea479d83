"""One private network per run, for real: bubblewrap, nsenter, a real app and real sockets.

The run's commands reach each other on localhost; the host cannot reach the app, and the app
cannot reach the host's loopback or anything else; nothing of the holder is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.command import CommandError, run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.liveapp import AppProcess
from cardrunner.processes.network import NetworkUnavailable, PrivateNetwork
from cardrunner.processes.sandbox import Sandbox, describe
from tests.support.mcp_harness import free_port

PY = sys.executable
pytestmark = pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")


@contextlib.contextmanager
def private(root: Path, groups: ProcessGroups, **kw: bool) -> Iterator[Sandbox]:
    """A run's sandbox joined to a fresh private network, let go of at the end."""
    found = probe()
    assert found.binary is not None
    box = Sandbox.start("bwrap", root, root / ".cardrunner" / "runs" / "r1", read=[Path(PY)])
    net = PrivateNetwork.open(found.binary, groups, **kw)
    try:
        yield box.joined(net)
    finally:
        box.joined(net).close()


def site(root: Path) -> list[str]:
    """A web app: a page with a marker, served on a port free on the host too."""
    (root / "site").mkdir(parents=True, exist_ok=True)
    (root / "site" / "index.html").write_text("<h1>private page 7f3a</h1>\n")
    port = free_port()
    return [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", "site"]


async def fetch(box: Sandbox, root: Path, url: str, groups: ProcessGroups) -> str:
    code = f"""
        import urllib.request
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
        try:
            print(opener.open({url!r}, timeout=5).read().decode())
        except OSError as exc:
            print("failed:", exc)
    """
    done = await run_command(
        [PY, "-c", textwrap.dedent(code)], root, 60, groups=groups, sandbox=box
    )
    return done.output


@pytest.mark.parametrize("join_user", [False, True], ids=["root", "unprivileged-way"])
async def test_the_app_and_another_command_share_localhost_and_the_host_is_outside(
    tmp_path: Path, join_user: bool
) -> None:
    """`join_user`: the way in without root (the user namespace first) also works as root."""
    groups = ProcessGroups()
    argv = site(tmp_path)
    url = f"http://127.0.0.1:{argv[3]}/"
    app = AppProcess(groups)
    with private(tmp_path, groups, join_user=join_user) as box:
        assert groups.live() == set()  # the holder is gone already; descriptors keep the network
        started = await app.start(argv, tmp_path, sandbox=box, url=url, wait_seconds=30)
        assert f"It answers at {url} (HTTP 200" in started
        assert "private page 7f3a" in await fetch(box, tmp_path, url, groups)
        with (
            pytest.raises(ConnectionRefusedError),
            socket.create_connection(("127.0.0.1", int(argv[3])), timeout=5),
        ):
            pass  # the host: nobody listens there
        await app.aclose()
    assert groups.live() == set()


async def test_the_app_cannot_reach_the_hosts_loopback_or_beyond(tmp_path: Path) -> None:
    groups = ProcessGroups()
    with socket.socket() as listener, private(tmp_path, groups) as box:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        code = f"""
            import socket
            for where in [("127.0.0.1", {port}), ("1.1.1.1", 53)]:
                try:
                    socket.create_connection(where, timeout=3).close(); print("reached", where)
                except OSError as exc:
                    print("refused", where, type(exc).__name__)
            try:
                socket.getaddrinfo("pypi.org", 443); print("resolved")
            except OSError as exc:
                print("no dns", type(exc).__name__)
        """
        done = await run_command(
            [PY, "-c", textwrap.dedent(code)], tmp_path, 60, groups=groups, sandbox=box
        )
        assert "refused ('127.0.0.1'" in done.output, done.output
        assert "refused ('1.1.1.1'" in done.output and "no dns" in done.output, done.output
        assert "reached" not in done.output and "resolved" not in done.output
        with pytest.raises(BlockingIOError):
            listener.accept()  # the listener saw no connection
    assert groups.live() == set()


def test_the_network_is_let_go_of_and_a_closed_one_is_not_entered(tmp_path: Path) -> None:
    groups = ProcessGroups()
    found = probe()
    assert found.binary is not None
    net = PrivateNetwork.open(found.binary, groups)
    held = [f"/proc/self/fd/{fd}" for fd in (net.user_fd, net.net_fd)]
    assert all(os.readlink(p).startswith(("user:[", "net:[")) for p in held)
    net.close()
    net.close()
    assert not any(os.path.lexists(p) and os.readlink(p).startswith("net:[") for p in held)
    with pytest.raises(Exception, match="closed"):
        net.enter()
    assert groups.live() == set()


async def test_an_app_that_never_answers_or_dies_is_reported_with_its_output(
    tmp_path: Path,
) -> None:
    groups = ProcessGroups()
    app = AppProcess(groups)
    url = f"http://127.0.0.1:{free_port()}/"
    silent = [
        PY,
        "-c",
        "import time; print('listening elsewhere 9999', flush=True); time.sleep(60)",
    ]
    dies = [PY, "-c", "import sys; print('no such template'); sys.exit(4)"]
    with private(tmp_path, groups) as box:
        with pytest.raises(CommandError) as never:
            await app.start(silent, tmp_path, sandbox=box, url=url, wait_seconds=1.5)
        assert f"did not answer at {url} within 1.5 s" in str(never.value)
        assert "ConnectionRefusedError" in str(never.value) or "refused" in str(never.value)
        assert "listening elsewhere 9999" in str(never.value) and not app.running
        with pytest.raises(CommandError) as died:
            await app.start(dies, tmp_path, sandbox=box, url=url, wait_seconds=30)
        assert "exited at once with exit code 4" in str(died.value)
        assert "no such template" in str(died.value)
    assert groups.live() == set()


def host_get(url: str) -> str:
    """GET from the host, outside the run's network (no proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as answer:
        return str(answer.read().decode())


async def test_a_forwarded_port_reaches_the_app_from_the_host_only_while_it_runs(
    tmp_path: Path,
) -> None:
    """For an MCP server reached over HTTP (outside the network): our 127.0.0.1 port, relayed."""
    groups = ProcessGroups()
    argv = site(tmp_path)
    url = f"http://localhost:{argv[3]}/"
    app = AppProcess(groups, forward=True)
    with private(tmp_path, groups) as box:
        started = await app.start(argv, tmp_path, sandbox=box, url=url, wait_seconds=30)
        found = re.search(r"they reach it at (http://127\.0\.0\.1:(\d+)/) instead", started)
        assert found, started
        assert "private page 7f3a" in await asyncio.to_thread(host_get, found[1])
        with pytest.raises(urllib.error.URLError):  # the app's own port stays inside
            await asyncio.to_thread(host_get, url)
        again = await app.start(argv, tmp_path, sandbox=box, url=url, wait_seconds=30)
        assert found[1] in again  # a restart keeps the forwarded URL
        await app.stop()
        with pytest.raises(urllib.error.URLError, match="refused"):
            await asyncio.to_thread(host_get, found[1])
    assert groups.live() == set()


async def test_two_runs_never_share_a_network(tmp_path: Path) -> None:
    groups = ProcessGroups()
    argv = site(tmp_path)
    url = f"http://127.0.0.1:{argv[3]}/"
    app = AppProcess(groups)
    with private(tmp_path, groups) as one, private(tmp_path, groups) as other:
        await app.start(argv, tmp_path, sandbox=one, url=url, wait_seconds=30)
        assert "private page 7f3a" in await fetch(one, tmp_path, url, groups)
        assert "failed:" in await fetch(other, tmp_path, url, groups)
        await app.aclose()
    assert groups.live() == set()


def test_without_nsenter_there_is_no_shared_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = probe()
    assert found.binary is not None
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsenter there
    with pytest.raises(NetworkUnavailable, match="nsenter"):
        PrivateNetwork.open(found.binary, ProcessGroups())
    assert "no nsenter (util-linux): each command has a network of its own" in describe(
        "bwrap", False
    )


def test_a_holder_that_names_no_namespace_is_reported_and_gone(tmp_path: Path) -> None:
    failing = tmp_path / "bwrap"
    failing.write_text(
        "#!/bin/sh\necho 'bwrap: No permission to create new namespace' >&2\nexit 1\n"
    )
    failing.chmod(0o755)
    groups = ProcessGroups()
    with pytest.raises(NetworkUnavailable, match="named no child: bwrap: No permission"):
        PrivateNetwork.open(str(failing), groups)
    assert groups.live() == set()
