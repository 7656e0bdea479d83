"""The board for every LSP editor: `cardrunner/board`, workspace symbols, moving cards by
hand, and a review done in the `.diff` document alone — a comment typed under a diff line
becomes the rejection reason, one hunk dropped by a code action stays out of the commit.

The server is the real `cardrunner lsp` subprocess with real git and real tools; only the
model's answers come from transcripts.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    Project,
    command,
    diags,
    editor_of,
    final,
    front_matter,
    git,
    lens_command,
    lens_titles,
    make_project,
    plain,
    project_of,
    read_back,
    slow_transcript,
    tool,
    turn,
    wait_for,
)

S = types.DiagnosticSeverity
BOARD = "cardrunner/board"
RUN_SUMMARY = "cardrunner/runSummary"
PRINTING_TESTS = (
    "import os, time; print('test_greeting PASSED', flush=True); "
    "os.environ.get('CARDRUNNER_CHECK') or time.sleep(30)  # {marker}"
)
"""Prints a result, then takes its time — for the model's `run_tests` only: the runner's own
checks (at the run's start and before every review, `CARDRUNNER_CHECK` set) end at once."""


@pytest.fixture
def lsp_project(tmp_path: Path) -> Project:
    """The usual workspace, with a test command that prints a result, then takes its time
    (when the model runs it; see `PRINTING_TESTS`)."""
    project = make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")
    toml = project.root / "cardrunner.toml"
    printing = json.dumps(["python", "-u", "-c", PRINTING_TESTS.format(marker=project.marker)])
    lines = [
        f"test = {printing}" if line.startswith("test = ") else line
        for line in toml.read_text().splitlines()
    ]
    toml.write_text("\n".join(lines) + "\n")
    return project


async def board(client: LanguageClient) -> dict[str, Any]:
    result = await client.protocol.send_request_async(BOARD, None)
    return plain(result)


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 60) -> None:
    """Ask again until `check` holds (a request, not a notification, is what changes)."""
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"timed out after {within} s waiting for {what}"
        await asyncio.sleep(0.05)


def column(result: dict[str, Any], state: str) -> list[dict[str, Any]]:
    [found] = [c for c in result["columns"] if c["state"] == state]
    return list(found["cards"])


async def symbols(client: LanguageClient, query: str) -> list[tuple[str, str]]:
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
    return sorted((s.name, s.container_name or "") for s in found or [])


async def test_board_and_symbols_group_cards_by_state_with_live_runs(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    alpha = project.write_card("alpha", title="Alpha first")
    done = project.card("beta")
    project.write_card("beta", title="Beta shipped")
    done.write_text(done.read_text().replace("state: New", "state: Done"))
    project.transcript("gamma", slow_transcript())
    gamma = project.write_card("gamma", title="Gamma slow")
    started = await command(client, "cardrunner.runCard", gamma.as_uri())
    assert "runId" in started, started

    async def gamma_in_work() -> bool:
        cards = column(await board(client), "In Work")
        return bool(cards) and (cards[0]["run"] or {}).get("tool") == "run_tests"

    await eventually(gamma_in_work, "gamma In Work, running run_tests")

    async def test_output_shown() -> bool:
        summary = await client.protocol.send_request_async(RUN_SUMMARY, {"uri": gamma.as_uri()})
        return "test_greeting PASSED" in plain(summary)["text"]

    await eventually(test_output_shown, "the test output in the live run view")
    summary = plain(await client.protocol.send_request_async(RUN_SUMMARY, {"uri": gamma.as_uri()}))
    assert summary["live"] is True and summary["logPath"].endswith(".jsonl")
    assert summary["text"].startswith(f"run {started['runId']}")
    assert "── run_tests output, as it arrives ──\ntest_greeting PASSED" in summary["text"]
    asked = {"uri": gamma.as_uri(), "timeline": True}
    live = plain(await client.protocol.send_request_async(RUN_SUMMARY, asked))["timeline"]
    assert live["state"] == "running" and live["tool"] == "run_tests", live
    assert "test_greeting PASSED" in live["output"]
    assert live["criteria"] and {c["status"] for c in live["criteria"]} == {"pending"}
    assert live["rounds"][-1]["round"] == 1 and live["omittedRounds"] == 0
    token = started["token"]
    await wait_for(  # progress is coalesced: it follows the run within a tenth of a second
        lambda: any(
            "run_tests · test_greeting PASSED" in (getattr(r, "message", "") or "")
            for r in client.progress_reports.get(token, [])
        ),
        what="the progress shows the newest output line",
    )
    result = await board(client)
    assert [c["title"] for c in column(result, "New")] == ["Alpha first"]
    assert [c["title"] for c in column(result, "Done")] == ["Beta shipped"]
    [work] = column(result, "In Work")
    assert work["uri"] == gamma.as_uri() and work["path"] == "cards/gamma.md"
    assert work["run"]["round"] == 1 and work["run"]["maxRounds"] == 12
    assert work["run"]["summary"].startswith("round 1/12")
    lens = work["run"]["summary"]
    assert "~$0.01 est." in lens  # a replay: nobody was billed
    assert [a["title"] for a in work["actions"]] == ["■ Cancel", lens]
    assert work["run"]["costEstimated"] is True
    assert result["running"] == 1 and result["waitingReviews"] == 0
    [new] = column(result, "New")
    assert new["actions"][0] == {
        "title": "▶ Run card",
        "command": "cardrunner.runCard",
        "arguments": [alpha.as_uri()],
    }

    assert [n for n, _ in await symbols(client, "")] == [
        "Alpha first",
        "Beta shipped",
        "Gamma slow",
    ]
    [(name, container)] = await symbols(client, "in work")
    assert name == "Gamma slow" and container.startswith("In Work · round 1/12")
    assert await symbols(client, "done") == [("Beta shipped", "Done")]
    assert await symbols(client, "alph") == [("Alpha first", "New")]

    refused = await command(client, "cardrunner.setState", gamma.as_uri(), "New")
    assert "cancel the run first" in refused["error"]
    assert (
        "by hand"
        in (await command(client, "cardrunner.setState", alpha.as_uri(), "Review"))["error"]
    )
    moved = await command(client, "cardrunner.setState", alpha.as_uri(), "Done")
    assert moved == {"uri": alpha.as_uri(), "state": "Done"}
    # asked at once: the command answered before the file was written, and the board waits
    # for the moves answered before it (read your own writes), not for the watcher
    result = await board(client)
    assert [c["title"] for c in column(result, "Done")] == ["Alpha first", "Beta shipped"]
    assert front_matter(alpha.read_text())["state"] == "Done"
    assert await symbols(client, "alph") == [("Alpha first", "Done")]
    assert (await command(client, "cardrunner.cancelRun", gamma.as_uri()))["cancelled"]


LONG = "".join(f"line {n}\n" for n in range(1, 31))
TWO_PLACES = LONG.replace("line 2\n", "line two\n").replace("line 28\n", "line twenty-eight\n")


def review_transcript() -> list[dict[str, Any]]:
    """Two edits far apart in one file; commit; after the rejection commit again.

    The file is text (`.txt`): the runner builds before every review, and compileall skips it."""
    return [
        turn(tool("write_file", path="src/long.txt", content=TWO_PLACES)),
        turn(
            *read_back("src/long.txt", ("line two", "line twenty-eight")),
            tool("git_commit", message="card: spelled\n\nSpell two lines out."),
        ),
        turn(tool("git_commit", message="card: spelled\n\nSpell two lines out, again.")),
        # the reviewer dropped a hunk: the runner withdrew the evidence, so it is read again
        turn(*read_back("src/long.txt", ("line two", "line 28"), "toolu_read_again")),
        final(),
    ]


def type_comment(client: LanguageClient, uri: str, after: str, comment: str) -> None:
    """What a user does in the `.diff` document: a `#` line under the diff line it is about."""
    editor = editor_of(client)
    lines = editor.text(uri).splitlines(keepends=True)
    at = lines.index(after + "\n") + 1
    text = "".join([*lines[:at], f"# {comment}\n", *lines[at:]])
    version = int(editor.docs[uri][1]) + 1
    editor.docs[uri] = [text, version]
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def actions_at(client: LanguageClient, uri: str, line: int) -> list[str]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a.title for a in found or []]


async def test_review_in_the_diff_document_comments_reject_then_one_hunk_dropped(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    (project.root / "src" / "long.txt").write_text(LONG)
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "a long file")
    card = project.write_card("spelled", title="Spell lines out")
    project.transcript("spelled", review_transcript())
    card_uri = card.as_uri()
    started = await command(client, "cardrunner.runCard", card_uri)

    await wait_for(lambda: len(editor.reviews) == 1, what="the first review")
    assert editor.reviews[-1]["criteria"] == [
        {
            "text": "The greeting says hello.",
            "status": "verified",
            "evidence": "src/long.txt shows 'line two'",
            "checked": "",
            "screenshots": [],
        },
        {
            "text": "The greeting names the user.",
            "status": "verified",
            "evidence": "src/long.txt shows 'line twenty-eight'",
            "checked": "",
            "screenshots": [],
        },
    ]
    diff_path = Path(editor.reviews[-1]["diffPath"])
    diff_uri = editor.open(diff_path)
    titles = await lens_titles(client, diff_uri)
    assert titles == [
        "✓ Accept & commit",
        "✗ Reject",
        "✗ Drop hunk 1 of src/long.txt (+1/-1)",
        "✗ Drop hunk 2 of src/long.txt (+1/-1)",
    ]
    result = await board(client)
    [waiting] = column(result, "Review")
    assert waiting["review"]["diffPath"] == str(diff_path) and result["waitingReviews"] == 1

    type_comment(client, diff_uri, "+line two", "say 'second', not 'two'")
    reject = await wait_for_lens(client, diff_uri, "✗ Reject with 1 comment(s)")
    assert (await command(client, reject.command, *(reject.arguments or [])))["decided"]

    await wait_for(lambda: len(editor.reviews) == 2, what="the second review")
    diff_uri = editor.open(Path(editor.reviews[-1]["diffPath"]))
    second = next(i for i, line in enumerate(editor.text(diff_uri).splitlines()) if "eight" in line)
    assert (await actions_at(client, diff_uri, second))[
        0
    ] == "✗ Drop hunk 2 of src/long.txt (+1/-1)"
    drop = await lens_command(client, diff_uri, "✗ Drop hunk 2 of src/long.txt (+1/-1)")
    toggled = await command(client, drop.command, *(drop.arguments or []))
    assert toggled["dropped"] is True and toggled["hunk"] == 1
    marks = await wait_for(lambda: diags(client, diff_uri), what="the dropped-hunk mark")
    assert [(d.code, d.severity, list(d.tags or [])) for d in marks] == [
        ("dropped-hunk", S.Hint, [types.DiagnosticTag.Unnecessary])
    ]
    assert "↺ Keep hunk 2 of src/long.txt (+1/-1)" in await actions_at(client, diff_uri, second)
    accept = await wait_for_lens(client, diff_uri, "✓ Accept & commit (1 of 2 hunks)")
    assert (await command(client, accept.command, *(accept.arguments or [])))["decided"]
    await wait_for(lambda: (editor.last_status(card_uri) or {}).get("state") == "done", what="done")

    commits = [
        line["data"]["result"]
        for line in project.log_lines(started["runId"])
        if line["type"] == "tool" and line["data"]["name"] == "git_commit"
    ]
    assert "REJECTED" in commits[0]
    assert "src/long.txt:2 (`+line two`): say 'second', not 'two'" in commits[0]
    assert "src/long.txt hunk 2" in commits[1]
    committed = git(project.root, "show", "HEAD:src/long.txt")
    assert "line two\n" in committed and "line 28\n" in committed
    assert "twenty-eight" not in committed
    await wait_for(lambda: not diags(client, diff_uri), what="the marks cleared after the review")


async def wait_for_lens(client: LanguageClient, uri: str, title: str) -> types.Command:
    async def there() -> bool:
        return title in await lens_titles(client, uri)

    await eventually(there, f"the lens {title!r}")
    return await lens_command(client, uri, title)
