"""The app under test: one instance the model starts and stops, its output kept in a ring.

`start_app` must tell the model whether the app came up (its first output) or died at once (its
exit code and what it said), and `stop_app` must end the app's whole process group, whatever it
spawned. The process itself is started like every command (`command.spawn`: its own session and
group, noted in the run's `ProcessGroups`, inside the sandbox when there is one).

A web app names the URL it serves (`[commands] app_url`): then "came up" means the URL answers,
asked from inside the run's private network by a probe process (cardrunner itself sits outside
it), within a bound; an app that dies first, or never answers, is reported with its output. A
stale app must not be what a browser checks: starting a running app restarts it, and while the
model wants the app up, `refresh` restarts it after each change of files (tools/commands.py).
An MCP server reached over HTTP runs outside the private network; for it (`forward`) a port on
the host's 127.0.0.1 is relayed to the app by a process inside, while the app runs.
"""

from __future__ import annotations

import asyncio
import shlex
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cardrunner.processes.command import (
    Child,
    CommandError,
    kill_group,
    run_command,
    spawn,
    spawn_failure,
    wait_within,
)
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox

PROBE = """
import sys, time, urllib.error, urllib.request
url, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
last = "no answer"
while time.monotonic() < end:
    try:
        with opener.open(url, timeout=2) as answer:
            print("HTTP", answer.status); sys.exit(0)
    except urllib.error.HTTPError as error:
        print("HTTP", error.code); sys.exit(0)
    except Exception as error:
        last = f"{type(error).__name__}: {getattr(error, 'reason', error)}"
    time.sleep(0.1)
print(last); sys.exit(1)
"""
"""Asks `url` until it answers (any HTTP status) or the time is up; runs where the app runs."""

RELAY = """
import socket, sys, threading
listener, app = socket.socket(fileno=int(sys.argv[1])), (sys.argv[2], int(sys.argv[3]))

def pump(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    for end in (source, sink):
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

def serve(client):
    try:
        inside = socket.create_connection(app, timeout=10)
    except OSError:
        return client.close()
    inside.settimeout(None)
    threading.Thread(target=pump, args=(inside, client), daemon=True).start()
    pump(client, inside)

while True:
    threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()
"""
"""Accepts on a listening socket made on the host (its descriptor, inherited) and carries each
connection to the app inside the run's network: the only way in, and only while the app runs."""


@dataclass(frozen=True)
class Launch:
    """How the app was last started, so a restart starts the same."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] | None
    sandbox: Sandbox | None
    url: str | None
    wait_seconds: float


@dataclass
class AppProcess:
    """The app under test: at most one instance, in its own process group, output in a ring."""

    groups: ProcessGroups
    forward: bool = False
    """Also reach a URL app from the host's 127.0.0.1 (for MCP servers reached over HTTP, which
    run outside the run's private network): a port of ours, relayed inside while the app runs."""
    max_lines: int = 2000
    startup_seconds: float = 1.0
    """How long `start` watches a fresh process for dying at once."""
    _proc: Child | None = field(default=None, init=False)
    _launch: Launch | None = field(default=None, init=False)
    _listener: socket.socket | None = field(default=None, init=False)
    _relay: Child | None = field(default=None, init=False)
    _port: int = field(default=0, init=False)
    _wanted: bool = field(default=False, init=False)
    """Started by the model and not stopped since: a change of files restarts it."""
    _reader: asyncio.Task[None] | None = field(default=None, init=False)
    _lines: deque[str] = field(init=False)
    _turn: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    """One start or stop at a time: a restart after a write must not race another."""

    def __post_init__(self) -> None:
        self._lines = deque(maxlen=self.max_lines)

    @property
    def running(self) -> bool:
        """True while the process we started has not exited."""
        return self._proc is not None and self._proc.returncode is None

    def output(self, last: int = 40) -> str:
        """The newest `last` lines the app wrote (stdout and stderr interleaved)."""
        lines = list(self._lines)[-last:]
        return "\n".join(lines) if lines else "(no output)"

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        partial = b""
        while chunk := await stream.read(65536):
            *complete, partial = (partial + chunk).split(b"\n")
            if len(partial) > 65536:  # a "line" without end: show it in pieces
                complete, partial = [*complete, partial], b""
            for raw in complete:
                self._lines.append(raw.decode("utf-8", errors="replace").rstrip("\r"))
        if partial:
            self._lines.append(partial.decode("utf-8", errors="replace").rstrip("\r"))

    async def _finish(self) -> None:
        """Kill what is left of the group (and the relay), let the reader drain, forget it."""
        proc, reader, relay = self._proc, self._reader, self._relay
        self._proc = self._reader = self._relay = None
        if relay is not None:
            await kill_group(relay)
        if self._listener is not None:  # refused, not left hanging, while the app is down
            self._listener.close()
            self._listener = None
        if proc is not None:
            await kill_group(proc)
        if reader is not None:
            await wait_within(1.0, reader)
            reader.cancel()

    async def start(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
        url: str | None = None,
        wait_seconds: float = 60.0,
    ) -> str:
        """Start the app (restart it if it runs); report its first output, or that `url`
        answers; raise `CommandError` if it fails at once or `url` never answers."""
        async with self._turn:
            return await self._start(argv, cwd, env, sandbox, url, wait_seconds)

    async def _start(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str] | None,
        sandbox: Sandbox | None,
        url: str | None,
        wait_seconds: float,
    ) -> str:
        was = self._proc.pid if self.running and self._proc is not None else None
        await self._finish()
        self._lines.clear()
        self._launch = Launch(list(argv), cwd, env, sandbox, url, wait_seconds)
        try:
            extra = {"PYTHONUNBUFFERED": "1", **(env or {})}
            proc = await spawn(argv, cwd, extra, groups=self.groups, sandbox=sandbox)
        except OSError as exc:
            raise CommandError(spawn_failure(argv, exc)[1]) from exc
        self._proc, self._reader = proc, asyncio.create_task(self._pump(proc.stdout))
        self._wanted = True
        again = f"Restarted the app (the one running as pid {was} was stopped). " if was else ""
        if url is not None:
            return again + await self._answering(proc, url, wait_seconds)
        try:
            async with asyncio.timeout(self.startup_seconds):
                await proc.wait()
        except TimeoutError:
            first = list(self._lines)[:30]
            shown = "\n".join(first) if first else "(no output yet)"
            return (
                f"{again}Started the app (pid {proc.pid}): {shlex.join(argv)}\n"
                f"First output:\n{shown}"
            )
        return await self._died(proc)

    async def _died(self, proc: Child, serves: bool = False) -> str:
        """What an app that exited at once said; CommandError unless it exited with 0 and was
        not meant to serve a URL."""
        code = proc.returncode
        await self._finish()
        text = f"The app exited at once with exit code {code}. Its output:\n{self.output()}"
        if code != 0 or serves:
            raise CommandError(text)
        return text

    async def _answering(self, proc: Child, url: str, seconds: float) -> str:
        """Wait until `url` answers, asked from where the app runs; CommandError (the app
        stopped) if the app dies first or the URL does not answer within `seconds`."""
        assert self._launch is not None
        launch, began = self._launch, time.monotonic()
        argv = [sys.executable, "-I", "-S", "-c", PROBE, url, str(seconds)]
        probe = asyncio.create_task(
            run_command(argv, launch.cwd, seconds + 10, launch.env, groups=self.groups,
                        sandbox=launch.sandbox)
        )  # fmt: skip
        exited = asyncio.create_task(proc.wait())
        try:
            await asyncio.wait({probe, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (probe, exited):
                task.cancel()
            await asyncio.gather(probe, exited, return_exceptions=True)
        if proc.returncode is not None:
            return await self._died(proc, serves=True)
        said = probe.result().output.strip() if probe.done() and not probe.cancelled() else ""
        if not said.startswith("HTTP "):
            await self._finish()
            raise CommandError(
                f"The app did not answer at {url} within {seconds:g} s ({said or 'no answer'}); "
                f"it was stopped. Its output:\n{self.output()}"
            )
        took = time.monotonic() - began
        outside = ""
        if self.forward:
            outside = (
                f" MCP servers reached over HTTP run outside this run's network: they reach it "
                f"at {await self._forwarded(url)} instead."
            )
        return (
            f"Started the app (pid {proc.pid}): {shlex.join(launch.argv)}\n"
            f"It answers at {url} ({said}, after {took:.1f} s); this run's MCP servers reach it "
            f"there.{outside} First output:\n{self.output(15)}"
        )

    async def refresh(self) -> str:
        """After the model changed files: restart the app it wants running, so nothing checks
        the old code; a note for the model ("" when there was nothing to restart)."""
        launch = self._launch
        if not self._wanted or launch is None:
            return ""
        try:
            said = await self.start(
                launch.argv, launch.cwd, launch.env, launch.sandbox, launch.url,
                launch.wait_seconds,
            )  # fmt: skip
        except CommandError as exc:
            self._wanted = True  # the next change tries again
            return f"[The app was restarted to run this change, and failed: {exc}]"
        where = f" at {launch.url}" if launch.url else ""
        return f"[The app was restarted to run this change; it runs{where} now.]\n{said}"

    async def stop(self) -> str:
        """Stop the app's whole process group; report how it ended and its last output."""
        async with self._turn:
            return await self._stop()

    async def _stop(self) -> str:
        self._wanted = False
        proc = self._proc
        if proc is None:
            return "The app is not running."
        if proc.returncode is not None:
            await self._finish()
            return (
                f"The app had already exited by itself with exit code {proc.returncode}. "
                f"Its last output:\n{self.output()}"
            )
        await self._finish()
        return f"Stopped the app (pid {proc.pid}). Its last output:\n{self.output()}"

    async def aclose(self) -> None:
        """Kill the app's group if it is running; safe to call any number of times."""
        await self._finish()

    async def _forwarded(self, url: str) -> str:
        """Start the relay from our 127.0.0.1 port into the app's network; the URL it gives."""
        assert self._launch is not None
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:  # the same port as before where it is free: a restart keeps the URL
            self._listener.bind(("127.0.0.1", self._port))
        except OSError:
            self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._port = self._listener.getsockname()[1]
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        fd = self._listener.fileno()
        argv = [sys.executable, "-I", "-S", "-c", RELAY, str(fd), parts.hostname or "", str(port)]
        launch = self._launch
        self._relay = await spawn(
            argv, launch.cwd, launch.env, groups=self.groups, sandbox=launch.sandbox,
            keep_fds=(fd,),
        )  # fmt: skip
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{self._port}"))
