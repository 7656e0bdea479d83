"""A stand-in for `cardrunner lsp` that speaks exactly the VS Code client's contract.

Why: the client's end-to-end test (`client-vscode/test/e2e/run.sh --server fake`) must be able to
prove the editor side — lens, status bar, review notification, diff editors, dropping a file,
accepting — on its own, without the real server or any model, so a failure points at one side.
It does what the real server promises (docs/lsp-extensions.md): `cardrunner/runStatus` with the
full list of runs, `cardrunner/reviewRequested` with before/after paths, the review commands,
a commit of the kept files and `state: Done` on the card, and it negotiates the review UI as
the real server does: a client that says `nativeReview` gets no `.diff` document and no
question. Every executeCommand (and any generic review UI) it sends or receives is
appended as JSON to the file named by `CARDRUNNER_FAKE_LSP_RECORD`, for the test to check.

Run: `python client-vscode/test/fake_lsp_server.py` (stdio).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

SOURCE_AFTER = 'def greet(name: str) -> str:\n    """The greeting shown on the start page."""\n    return f"Hello, {name}!"\n'
NOTES = "Scratch notes the model left behind; a reviewer drops this file.\n"
ROUNDS = 3


class FakeServer(LanguageServer):
    """Runs of this session, keyed by card URI, as `cardrunner/runStatus` reports them."""

    def __init__(self) -> None:
        super().__init__("fake-cardrunner", "0.0")
        self.runs: dict[str, dict[str, Any]] = {}
        self.snapshots = Path(tempfile.mkdtemp(prefix="fake-cardrunner-before-"))
        self.tasks: set[asyncio.Task[None]] = set()
        self.native_review = False
        """The client said at `initialize` that it shows reviews itself."""


server = FakeServer()


def _path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _root(card: Path) -> Path:
    return card.parent.parent


def _record(command: str, args: list[Any]) -> None:
    target = os.environ.get("CARDRUNNER_FAKE_LSP_RECORD")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"command": command, "arguments": args}) + "\n")


def _title(card: Path) -> str:
    for line in card.read_text(encoding="utf-8").splitlines():
        if line.startswith("title:"):
            return line.removeprefix("title:").strip()
    return card.name


def _publish(ls: FakeServer) -> None:
    ls.protocol.notify("cardrunner/runStatus", {"runs": list(ls.runs.values())})


def _refresh_lenses(ls: FakeServer) -> None:
    ls.protocol.send_request("workspace/codeLens/refresh", None)


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def lenses(ls: FakeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    top = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
    )
    state = ls.runs.get(uri, {}).get("state")
    if state == "running":
        titles = [("■ Cancel", "cardrunner.cancelRun")]
    elif state == "review":
        titles = [
            ("✓ Accept & commit", "cardrunner.acceptChanges"),
            ("✗ Reject…", "cardrunner.rejectChanges"),
        ]
    else:
        titles = [("▶ Run card", "cardrunner.runCard")]
    return [
        types.CodeLens(range=top, command=types.Command(title=t, command=c, arguments=[uri]))
        for t, c in titles
    ]


@server.command("cardrunner.runCard")
def run_card(ls: FakeServer, uri: str) -> dict[str, str]:
    _record("cardrunner.runCard", [uri])
    card = _path(uri)
    run_id = f"run-{len(ls.runs) + 1}"
    ls.runs[uri] = {
        "uri": uri,
        "title": _title(card),
        "runId": run_id,
        "state": "running",
        "round": 0,
        "maxRounds": 12,
        "tokens": 0,
        "costUsd": 0.0,
        "tool": None,
        "reason": None,
        "logPath": str(_root(card) / ".cardrunner" / "runs" / f"{run_id}.jsonl"),
        "commit": None,
    }
    task = asyncio.get_running_loop().create_task(_run(ls, uri))
    ls.tasks.add(task)
    task.add_done_callback(ls.tasks.discard)
    return {"runId": run_id}


async def _run(ls: FakeServer, uri: str) -> None:
    run = ls.runs[uri]
    card = _path(uri)
    root = _root(card)
    _refresh_lenses(ls)
    for n, tool in enumerate(["read_file", "write_file", "run_tests"], start=1):
        run.update(round=n, tokens=1200 * n, costUsd=0.01 * n, tool=tool)
        _publish(ls)
        await asyncio.sleep(0.5)  # a round takes time; the status bar shows each one
    review = await asyncio.to_thread(_make_change, ls, run, root)
    run.update(state="review", round=ROUNDS + 1, tool="git_commit")
    _publish(ls)
    ls.protocol.notify("cardrunner/reviewRequested", review)
    _refresh_lenses(ls)
    if not ls.native_review:
        await _generic_review(ls, run, review)


async def _generic_review(ls: FakeServer, run: dict[str, Any], review: dict[str, Any]) -> None:
    """The real server's generic review UI: open the .diff, ask the question."""
    diff_uri = Path(review["diffPath"]).as_uri()
    shown = await ls.window_show_document_async(
        types.ShowDocumentParams(uri=diff_uri, take_focus=True)
    )
    _record("window/showDocument", [diff_uri, shown.success])
    question = types.ShowMessageRequestParams(
        type=types.MessageType.Info,
        message=f"{run['title']}: accept the changes?",
        actions=[
            types.MessageActionItem(title=t) for t in ("Accept & commit", "Reject", "Show diff")
        ],
    )
    try:
        answer = await asyncio.wait_for(ls.window_show_message_request_async(question), 60)
        _record("window/showMessageRequest", [None if answer is None else answer.title])
    except TimeoutError:
        _record("window/showMessageRequest", ["no answer in 60 s"])


def _make_change(ls: FakeServer, run: dict[str, Any], root: Path) -> dict[str, Any]:
    """Change one file and add one, keeping a copy of the old one; return the review request."""
    before = ls.snapshots / "src" / "greet.py"
    before.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "src" / "greet.py", before)
    (root / "src" / "greet.py").write_text(SOURCE_AFTER, encoding="utf-8")
    (root / "src" / "NOTES.md").write_text(NOTES, encoding="utf-8")
    log = Path(run["logPath"])
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(
        json.dumps({"type": "start", "data": {"card": run["uri"]}}) + "\n", encoding="utf-8"
    )
    diff = '--- a/src/greet.py\n+++ b/src/greet.py\n@@ -3 +3 @@\n-    return "Hello " + name\n+    return f"Hello, {name}!"\n'
    log.with_suffix(".diff").write_text(diff, encoding="utf-8")
    return {
        "uri": run["uri"],
        "runId": run["runId"],
        "title": run["title"],
        "message": f"card: {run['title']}",
        "diffPath": str(log.with_suffix(".diff")),
        "files": [
            {
                "path": "src/greet.py",
                "before": str(before),
                "after": str(root / "src" / "greet.py"),
            },
            {"path": "src/NOTES.md", "before": None, "after": str(root / "src" / "NOTES.md")},
        ],
    }


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@server.command("cardrunner.acceptChanges")
def accept(ls: FakeServer, uri: str, *options: dict[str, Any]) -> dict[str, str]:
    _record("cardrunner.acceptChanges", [uri, *options])
    run = ls.runs[uri]
    card = _path(uri)
    root = _root(card)
    drop = set(options[0].get("drop", [])) if options else set()
    kept = [p for p in ("src/greet.py", "src/NOTES.md") if p not in drop]
    _git(root, "add", "--", *kept)
    _git(root, "commit", "-q", "-m", f"card: {run['title']}")
    sha = _git(root, "rev-parse", "HEAD")
    text = card.read_text(encoding="utf-8").replace("state: New", "state: Done", 1)
    card.write_text(text, encoding="utf-8")
    run.update(state="done", commit=sha, tool=None)
    _publish(ls)
    _refresh_lenses(ls)
    return {"commit": sha}


@server.command("cardrunner.rejectChanges")
def reject(ls: FakeServer, uri: str, reason: str) -> None:
    _record("cardrunner.rejectChanges", [uri, reason])
    ls.runs[uri].update(state="failed", reason="rejected")
    _publish(ls)


@server.command("cardrunner.showDiff")
def show_diff(ls: FakeServer, uri: str) -> None:
    _record("cardrunner.showDiff", [uri])


@server.command("cardrunner.showLog")
def show_log(ls: FakeServer, uri: str) -> None:
    _record("cardrunner.showLog", [uri])


@server.command("cardrunner.cancelRun")
def cancel(ls: FakeServer, uri: str) -> None:
    _record("cardrunner.cancelRun", [uri])


@server.command("cardrunner.resumeRun")
def resume(ls: FakeServer, uri: str, *grant: dict[str, Any]) -> None:
    _record("cardrunner.resumeRun", [uri, *grant])


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def configuration(ls: FakeServer, params: types.DidChangeConfigurationParams) -> None:
    _record("workspace/didChangeConfiguration", [params.settings])


@server.feature(types.INITIALIZE)
def initialize(ls: FakeServer, params: types.InitializeParams) -> None:
    # Only the key's last 4 characters: enough to tell which key the client passed, never the key.
    key_tail = os.environ.get("ANTHROPIC_API_KEY", "")[-4:]
    _record("initialize", [params.initialization_options, key_tail])
    own = (params.initialization_options or {}).get("client") or {}
    ls.native_review = own.get("notifications") is True and own.get("nativeReview") is True


if __name__ == "__main__":
    server.start_io()
