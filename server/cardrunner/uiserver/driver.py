"""The driver: a child process that runs one Textual app headless and obeys JSON-lines commands.

    python -m cardrunner.uiserver.driver --app invoice.app:InvoiceApp --cwd DIR

Why a separate process: the app is imported fresh on every start, so a restart sees the code the
model just changed, and a crashing or hanging app cannot take the MCP server down with it.

stdout is the message channel and nothing else may reach it, so the real stdout is kept on a
private file descriptor and fd 1 (and `sys.stdout`) point at stderr before any app code runs.
When stdin reaches EOF (the server exited or was killed) the driver shuts the app down and exits;
if the app does not let it, a watchdog ends the process a few seconds later.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import threading
import traceback
from typing import IO, Any

from cardrunner.uiserver.protocol import Hello, Reply, Request, decode_request, encode

SIZE = (100, 32)
EXIT_GRACE_SECONDS = 5.0
TRACEBACK_LINES = 25


def claim_stdout() -> IO[bytes]:
    """Keep the real stdout for messages; send everything else written to fd 1 to stderr."""
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def tail(error: BaseException) -> str:
    lines = "".join(traceback.format_exception(error)).rstrip().splitlines()
    cut = ["..."] if len(lines) > TRACEBACK_LINES else []
    return "\n".join(cut + lines[-TRACEBACK_LINES:])


def load_app(spec: str) -> Any:
    """Import `module:Class` and create the app."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"--app must look like module:Class, got {spec!r}")
    return getattr(importlib.import_module(module_name), class_name)()


def start_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
    """Feed stdin lines into the queue from a thread; None marks EOF and arms the watchdog."""

    def read() -> None:
        for line in sys.stdin.buffer:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)
        watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, args=(0,))
        watchdog.daemon = True
        watchdog.start()

    threading.Thread(target=read, name="stdin", daemon=True).start()


def ended_text(app: Any) -> str:
    error = getattr(app, "_exception", None)
    if error is not None:
        return (
            "The app crashed:\n" + tail(error) + "\nThe app is no longer running; "
            "fix the code and call ui_start."
        )
    return f"The app exited (return code {app.return_code}). Call ui_start to start it again."


def is_ended(app: Any) -> bool:
    task = getattr(app, "_task", None)
    return task is not None and task.done()


def summary(app: Any, spec: str) -> str:
    from cardrunner.uiserver import widgets

    ids = [w.id for w in widgets.addressable(app) if w.id]
    return (
        f"{spec} is running headless ({SIZE[0]}x{SIZE[1]}), pid {os.getpid()}, "
        f"title {app.title!r}.\nElements with ids: {', '.join(ids)}"
    )


async def handle(pilot: Any, request: Request) -> Reply:
    from cardrunner.uiserver.actions import ACTIONS, ActionError

    try:
        text = await ACTIONS[request.command](pilot, request.args)
        return Reply(id=request.id, ok=True, text=text)
    except ActionError as error:
        return Reply(id=request.id, ok=False, text=str(error))
    except Exception as error:  # the app or Textual failed under the command
        if is_ended(pilot.app):
            return Reply(id=request.id, ok=False, text=ended_text(pilot.app), ended=True)
        return Reply(id=request.id, ok=False, text=f"{request.command} failed:\n{tail(error)}")


async def serve(app: Any, spec: str, channel: IO[bytes]) -> None:
    """Run the app and answer requests until EOF or until the app ends."""
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    start_reader(asyncio.get_running_loop(), queue)
    greeted = False
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            if is_ended(app):
                channel.write(encode(Hello(ok=False, text=ended_text(app), pid=os.getpid())))
                greeted = True
                return
            channel.write(encode(Hello(ok=True, text=summary(app, spec), pid=os.getpid())))
            greeted = True
            while (line := await queue.get()) is not None:
                request = decode_request(line)
                reply = await handle(pilot, request)
                if is_ended(app) and not reply.ended:
                    quit_cleanly = getattr(app, "_exception", None) is None
                    text = f"{reply.text}\n{ended_text(app)}" if quit_cleanly else ended_text(app)
                    reply = Reply(id=request.id, ok=quit_cleanly, text=text, ended=True)
                channel.write(encode(reply))
                if reply.ended:
                    break
    except Exception as error:
        if not greeted:
            text = ended_text(app) if getattr(app, "_exception", None) else tail(error)
            channel.write(encode(Hello(ok=False, text=text, pid=os.getpid())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cardrunner.uiserver.driver")
    parser.add_argument("--app", required=True, help="module:Class of a Textual App")
    parser.add_argument("--cwd", default=".", help="folder to run in (put first on sys.path)")
    args = parser.parse_args(argv)
    channel = claim_stdout()
    cwd = os.path.abspath(args.cwd)
    try:
        os.chdir(cwd)
        sys.path.insert(0, cwd)
        app = load_app(args.app)
    except BaseException as error:
        channel.write(encode(Hello(ok=False, text=tail(error), pid=os.getpid())))
        return 1
    asyncio.run(serve(app, args.app, channel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
