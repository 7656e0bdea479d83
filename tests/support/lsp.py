"""Helpers for the language-server end-to-end tests: a workspace, an editor model, waiting.

The server runs as a real subprocess (`python -m cardrunner lsp`) over stdio, with the real
loop, real tools, a real git repository and the scripted model playing transcripts written by
the test. `Editor` plays the editor side: it keeps the text of the documents it opened, applies
`workspace/applyEdit` to them and echoes the change back with `didChange` (as real editors
do), answers the review question as the test says, and records what the server sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.support.project import init_repo, slow_argv

ACCEPT, REJECT, SHOW_DIFF = "Accept & commit", "Reject", "Show diff"

CARD = """---
title: {title}
state: New
category: Improvement
---
The greeting should be friendly.

## Acceptance criteria

- The greeting says hello.
- The greeting names the user.
"""

TOML = """
cards = "cards"
replay = "transcripts"

[paths]
read = ["."]
write = ["src"]

[commands]
build = ["python", "-m", "compileall", "-q", "src"]
test = {test}

[limits]
max_rounds = 12
"""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, timeout=30
    )
    return done.stdout


@dataclass
class Project:
    """A temporary workspace: a git repository with cards, settings and transcripts."""

    root: Path
    marker: str

    def card(self, name: str) -> Path:
        return self.root / "cards" / f"{name}.md"

    def uri(self, name: str) -> str:
        return self.card(name).as_uri()

    def write_card(self, name: str, text: str | None = None, title: str | None = None) -> Path:
        path = self.card(name)
        path.write_text(text if text is not None else CARD.format(title=title or name))
        return path

    def transcript(self, name: str, responses: list[dict[str, Any]]) -> None:
        folder = self.root / "transcripts"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({"responses": responses}, indent=1))

    def log_lines(self, run_id: str) -> list[dict[str, Any]]:
        path = self.root / ".cardrunner" / "runs" / f"{run_id}.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def commit_results(self) -> list[str]:
        """What each `git_commit` answered, in order, in the project's one run log."""
        [run_log] = (self.root / ".cardrunner" / "runs").glob("*.jsonl")
        return [
            json.loads(line)["data"]["result"]
            for line in run_log.read_text().splitlines()
            if json.loads(line)["type"] == "tool" and '"git_commit"' in line
        ]


def make_project(root: Path, marker: str) -> Project:
    (root / "src").mkdir(parents=True)
    (root / "cards").mkdir()
    (root / "src" / "app.py").write_text('def greet(name):\n    return "hi"\n')
    (root / "cardrunner.toml").write_text(TOML.format(test=json.dumps(slow_argv(marker, 30))))
    (root / ".gitignore").write_text(".cardrunner/\n__pycache__/\n")
    init_repo(root, "start")
    return Project(root, marker)


# --- transcripts ------------------------------------------------------------------------------


def tool(name: str, _id: str | None = None, **arguments: Any) -> dict[str, Any]:
    """A tool call; `_id` fixes its tool_use id so evidence can cite it."""
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": arguments}
    if _id:
        block["id"] = _id
    return block


def report(
    number: int, evidence: str, call: str, quote: str, passed: bool = True
) -> dict[str, Any]:
    """`report_criterion` on criterion `number` (from 1) citing one call and a quote from it."""
    return tool(
        "report_criterion",
        index=number,
        passed=passed,
        evidence=evidence,
        cites=[{"call": call, "quote": quote}],
    )


def read_back(path: str, quotes: tuple[str, str], call: str = "toolu_read") -> list[dict[str, Any]]:
    """Read `path` and report both criteria, each citing that read with its quote."""
    return [
        tool("read_file", call, path=path),
        report(1, f"{path} shows {quotes[0]!r}", call, quotes[0]),
        report(2, f"{path} shows {quotes[1]!r}", call, quotes[1]),
    ]


def verify_greeting(call: str = "toolu_read_app") -> list[dict[str, Any]]:
    """Read GOOD_APP back and report both criteria on what the read returned."""
    return [
        tool("read_file", call, path="src/app.py"),
        report(1, "greet('Ann') -> hello Ann", call, 'return f"hello'),
        report(2, "the name is in the greeting", call, "hello {name}"),
    ]


def turn(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    content = ([{"type": "text", "text": text}] if text else []) + list(calls)
    return {"content": content, "stop_reason": "tool_use"}


def final(text: str = "Done and verified.\nRESULT: done") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


GOOD_APP = 'def greet(name):\n    return f"hello {name}"\n'
BROKEN_APP = "def greet(name:\n    return 1\n"


def happy_transcript() -> list[dict[str, Any]]:
    """Break the build, fix it, verify both criteria, commit, finish."""
    return [
        turn(tool("write_file", path="src/app.py", content=BROKEN_APP), tool("build_app")),
        turn(
            tool("write_file", path="src/app.py", content=GOOD_APP),
            tool("build_app"),
            *verify_greeting()[:2],
        ),
        turn(
            verify_greeting()[2],
            tool("git_commit", message="card: greeting\n\nSay hello with the name."),
        ),
        final(),
    ]


def slow_transcript() -> list[dict[str, Any]]:
    """A run that sits in a 30 s test command until it is cancelled."""
    return [turn(tool("run_tests")), final("RESULT: failed: tests never ended")]


# --- the editor side ---------------------------------------------------------------------------


@dataclass
class Editor:
    """What a real editor would do with the server's requests, recorded for assertions."""

    client: LanguageClient
    docs: dict[str, list[Any]] = field(default_factory=dict)  # uri -> [text, version]
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    diagnostics: list[types.PublishDiagnosticsParams] = field(default_factory=list)
    questions: list[types.ShowMessageRequestParams] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    """Answers to review questions, in order; None (dismiss) when empty."""
    hold: asyncio.Event | None = None
    """When set, review questions wait for this event before answering."""
    shown: list[str] = field(default_factory=list)
    status: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    lens_refreshes: int = 0
    apply: bool = True
    show_document_null: bool = False
    reloads: bool = True
    """Reload a clean buffer when its file changes, as VS Code does (False: an editor that
    does not, as Neovim and Emacs without the reload of docs/editors.md)."""
    files: dict[str, tuple[Path, str]] = field(default_factory=dict)
    """uri -> (file, its text when the buffer was last loaded from it)."""
    _follower: asyncio.Task[None] | None = None

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        text = path.read_text()
        self.docs[uri] = [text, 1]
        self.files[uri] = (path, text)
        if self.reloads and self._follower is None:
            self._follower = asyncio.get_running_loop().create_task(self._follow_files())
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=text
                )
            )
        )
        return uri

    def text(self, uri: str) -> str:
        return str(self.docs[uri][0])

    async def _follow_files(self) -> None:
        """The editor's file watch (a poll here: the test's loop ends it with the test). A
        buffer that still reads as its file did when loaded is clean: it takes the new text,
        as `didChange` of the whole document; one with unsaved edits is left alone."""
        while True:
            for uri, (path, loaded) in list(self.files.items()):
                try:
                    on_disk = await asyncio.to_thread(path.read_text)
                except OSError:
                    continue
                if on_disk != loaded and self.text(uri) == loaded:
                    self.files[uri] = (path, on_disk)
                    self._replace(uri, on_disk)
            await asyncio.sleep(0.02)

    def _replace(self, uri: str, text: str) -> None:
        """The buffer of `uri` now reads `text`; the server hears it as a new version."""
        version = int(self.docs[uri][1]) + 1
        self.docs[uri] = [text, version]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def last_status(self, uri: str) -> dict[str, Any] | None:
        for notice in reversed(self.status):
            for run in notice["runs"]:
                if run["uri"] == uri:
                    return dict(run)
        return None

    def _apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        if not self.apply:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="test says no")
        changes: dict[str, list[types.TextEdit]] = {}
        for uri, edits in (params.edit.changes or {}).items():
            changes.setdefault(uri, []).extend(edits)
        for doc_edit in params.edit.document_changes or []:
            assert isinstance(doc_edit, types.TextDocumentEdit)
            if doc_edit.text_document.version not in (
                None,
                self.docs[doc_edit.text_document.uri][1],
            ):
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale")
            changes.setdefault(doc_edit.text_document.uri, []).extend(doc_edit.edits)  # type: ignore[arg-type]
        for uri, edits in changes.items():
            text = self.text(uri)
            for edit in sorted(
                edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
            ):
                start, end = _offset(text, edit.range.start), _offset(text, edit.range.end)
                text = text[:start] + edit.new_text + text[end:]
            self._replace(uri, text)
        return types.ApplyWorkspaceEditResult(applied=True)

    def register(self) -> None:
        c = self.client

        @c.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> Any:
            return self._apply(params)

        @c.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def ask(ls: LanguageClient, params: types.ShowMessageRequestParams) -> Any:
            self.questions.append(params)
            if self.hold is not None:
                await self.hold.wait()
            answer = self.answers.pop(0) if self.answers else None
            return types.MessageActionItem(title=answer) if answer else None

        @c.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def refresh(ls: LanguageClient, params: Any) -> None:
            self.lens_refreshes += 1

        @c.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(ls: LanguageClient, params: types.ShowDocumentParams) -> Any:
            self.shown.append(params.uri)
            return None if self.show_document_null else types.ShowDocumentResult(success=True)

        @c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics.append(params)
            ls.diagnostics[params.uri] = params.diagnostics

        @c.feature("cardrunner/runStatus")
        def run_status(ls: LanguageClient, params: Any) -> None:
            self.status.append(plain(params))

        @c.feature("cardrunner/reviewRequested")
        def review_requested(ls: LanguageClient, params: Any) -> None:
            self.reviews.append(plain(params))


def plain(value: Any) -> Any:
    """pygls hands custom notifications (and custom requests' answers) over as namedtuples;
    make them plain JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _offset(text: str, position: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: position.line]) + position.character


class _Client(LanguageClient):
    """pytest-lsp's client, except that `stop()` lets the server know.

    pygls's `stop()` waits for the server to exit and never tells it to: after an assertion
    failed before `shutdown_session()`, the server went on reading its still open stdin and the
    test hung until pytest's timeout (5 minutes, each ecosystem of a parametrized test). Closing
    its stdin is what an editor that goes away does; the server ends on it."""

    async def stop(self) -> Any:
        server = self._server
        if server is not None and server.returncode is None and server.stdin is not None:
            server.stdin.close()
        return await super().stop()


def make_client() -> LanguageClient:
    """The pytest-lsp client without the defaults `Editor` replaces."""
    client = _Client(converter_factory=default_converter)
    replaced = {types.WINDOW_SHOW_DOCUMENT, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS}
    register_lsp_features(
        client, {k: v for k, v in DEFAULT_CLIENT_FEATURES.items() if k not in replaced}
    )
    return client


def server_config() -> ClientServerConfig:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "cardrunner", "lsp"],
        client_factory=make_client,
        server_env=env,
    )


def assert_only_parked_worktrees(root: Path) -> None:
    """No worktree of a run is left but the card's own, parked (detached) for its next run."""
    trees = git(root, "worktree", "list", "--porcelain").split("\n\n")
    kept = [t for t in trees if t.strip() and "branch refs/heads/main" not in t]
    assert all("\ndetached" in t and "/parked-" in t for t in kept), kept


# --- waiting ------------------------------------------------------------------------------------


async def wait_for(
    predicate: Callable[[], Any], within: float = 20.0, what: str | Callable[[], str] = ""
) -> Any:
    """Poll `predicate` until it returns something truthy; fail after `within` seconds
    (`what`, or what it returns then, says what was awaited)."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {within} s waiting for {said or predicate}")
        await asyncio.sleep(0.02)


def read(path: str | Path) -> str:
    return Path(path).read_text()


def diags(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(uri, ()))


def diag_codes(client: LanguageClient, uri: str) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in diags(client, uri)}


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains `marker` (a /proc scan)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


# --- talking to the server -------------------------------------------------------------------


def editor_of(client: LanguageClient) -> Editor:
    return client.editor  # type: ignore[attr-defined,no-any-return]


def project_of(client: LanguageClient) -> Project:
    return client.project  # type: ignore[attr-defined,no-any-return]


async def command(client: LanguageClient, name: str, *arguments: Any) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )
    assert isinstance(result, dict), result
    return result


FORECAST_PREFIXES = ("≈ ", "cost unknown (")
"""How a card's cost forecast lens begins (`record/forecast.py`): a line to read on every idle
card, which tests of the card's choices leave out (`is_forecast`)."""


def is_forecast(title: str) -> bool:
    return title.startswith(FORECAST_PREFIXES)


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    """The card's lenses but its cost forecast (tests/unit/lsp/test_forecast.py has that)."""
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [
        lens.command.title
        for lens in lenses or []
        if lens.command and not is_forecast(lens.command.title)
    ]


async def lens_command(client: LanguageClient, uri: str, title: str) -> types.Command:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    for lens in lenses or []:
        if lens.command and lens.command.title == title:
            return lens.command
    raise AssertionError(f"no lens {title!r} on {uri}: {[lens.command for lens in lenses or []]}")


def front_matter(text: str) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load(text.split("---")[1]))
