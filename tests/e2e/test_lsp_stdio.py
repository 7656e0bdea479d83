"""The server's stdio: stdin read on its thread, replies written on the event loop.

An editor that writes its whole session at once and closes the pipe (a script, a test harness)
must still get every answer: the replies queue on the pipe and leave before the process does.
Input redirected from a regular file is read the same way, with the same result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ASKS = 60
"""Requests whose answers (a few KiB each) together overfill a pipe's 64 KiB buffer."""
SESSION = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
    {"jsonrpc": "2.0", "method": "initialized", "params": {}},
    *(
        {"jsonrpc": "2.0", "id": 10 + n, "method": "workspace/executeCommand",
         "params": {"command": "cardrunner.debug.modules", "arguments": []}}
        for n in range(ASKS)
    ),
    {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
    {"jsonrpc": "2.0", "method": "exit"},
]  # fmt: skip
EVERY_ID = {1, 2, *range(10, 10 + ASKS)}


def framed(messages: list[dict[str, Any]]) -> bytes:
    out = b""
    for message in messages:
        body = json.dumps(message).encode()
        out += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return out


def unframed(data: bytes) -> list[dict[str, Any]]:
    messages = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"Content")
        )
        messages.append(json.loads(rest[:length]))
        data = rest[length:]
    return messages


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def answered(messages: list[dict[str, Any]]) -> set[int]:
    return {m["id"] for m in messages if "id" in m and "method" not in m and "error" not in m}


def test_an_editor_that_reads_late_still_gets_every_answer_and_status_0(tmp_path: Path) -> None:
    """The "editor" writes everything, `exit` right behind `shutdown` (received, not yet
    answered: the spec's status is still 0), and reads its answers only once the server has
    logged that it ends: by then they have overfilled the pipe and wait in the server's queue."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cardrunner", "lsp"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env(),
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    server.stdin.write(framed(SESSION))
    server.stdin.close()
    log = b""
    while b"ending:" not in log and (line := server.stderr.readline()):
        log += line
    assert b"the editor said exit" in log, log.decode()[-2000:]
    out = server.stdout.read()  # to the end: the server has exited
    assert server.wait(timeout=120) == 0, (log + server.stderr.read()).decode()[-2000:]
    assert len(out) > 1 << 16
    assert answered(unframed(out)) == EVERY_ID


def test_a_session_from_a_regular_file_is_read_on_the_fallback(tmp_path: Path) -> None:
    session, output = tmp_path / "session.bin", tmp_path / "out.bin"
    session.write_bytes(framed(SESSION))
    with session.open("rb") as stdin, output.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "cardrunner", "lsp"], stdin=stdin, stdout=stdout,
            stderr=subprocess.PIPE, cwd=tmp_path, env=env(), timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert answered(unframed(output.read_bytes())) == EVERY_ID
