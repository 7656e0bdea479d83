"""A card run from the editor: lens → run → progress → diagnostics → review → commit → Done.

The server is the real `cardrunner lsp` subprocess; the loop, the tools (files, compileall,
git) are real; only the model's answers come from a transcript file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    ACCEPT,
    GOOD_APP,
    REJECT,
    SHOW_DIFF,
    command,
    diag_codes,
    editor_of,
    final,
    front_matter,
    git,
    happy_transcript,
    lens_command,
    lens_titles,
    project_of,
    read,
    tool,
    turn,
    verify_greeting,
    wait_for,
)

S = types.DiagnosticSeverity


async def test_lens_run_progress_diagnostics_review_commit_and_done(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("greeting", title="Greeting says hello")
    project.transcript("greeting", happy_transcript())
    uri = editor.open(card)
    editor.hold = asyncio.Event()
    editor.answers = [ACCEPT]

    run = await lens_command(client, uri, "▶ Run card")
    result = await command(client, run.command, *(run.arguments or []))
    token, run_id = result["token"], result["runId"]
    assert token and run_id

    await wait_for(lambda: editor.questions, what="the review question")
    # Paused in review: criteria verified with evidence, the build problem gone again.
    codes = diag_codes(client, uri)
    assert codes["criterion-1"].severity == S.Hint  # a success: not in problem lists
    assert "hello Ann" in codes["criterion-1"].message
    assert codes["criterion-2"].severity == S.Hint
    assert codes["run"].range.start.line == 1  # the title line
    app_uri = (project.root / "src" / "app.py").as_uri()
    app_publishes = [p for p in editor.diagnostics if p.uri == app_uri]
    assert any(
        d.source == "cardrunner" and d.range.start.line == 0 for d in app_publishes[0].diagnostics
    )
    assert list(app_publishes[-1].diagnostics) == []
    assert await lens_titles(client, uri) == ["Review changes", "✓ Accept & commit", "✗ Reject"]
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "review")
    review = editor.reviews[-1]
    assert review["runId"] == run_id and review["uri"] == uri
    [changed] = review["files"]
    assert changed["path"] == "src/app.py"
    assert read(changed["before"]) == 'def greet(name):\n    return "hi"\n'
    assert read(changed["after"]) == GOOD_APP
    assert read(review["diffPath"]).startswith("diff --git")
    assert Path(review["diffPath"]).as_uri() in editor.shown

    editor.hold.set()
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "done", what="done")

    reports = await wait_for(
        lambda: (r := client.progress_reports.get(token)) and r[-1].kind == "end" and r,
        what="the progress to end",
    )
    assert reports[0].kind == "begin" and reports[0].cancellable
    middle = [r for r in reports[1:-1] if r.kind == "report"]
    assert len(middle) >= 4 and any("round 3/12" in (r.message or "") for r in middle)
    assert any(r.percentage == 25 for r in middle)  # 3 of 12 rounds
    assert any((r.message or "").startswith("waiting for your review · ") for r in middle)
    assert not any(
        "review · " in (r.message or "") and "git_commit" in (r.message or "") for r in middle
    )
    assert "done" in (reports[-1].message or "")

    message = git(project.root, "log", "-1", "--format=%B", "HEAD~1")  # HEAD: the card's state
    assert git(project.root, "log", "-1", "--format=%s").endswith("→ Done\n")
    assert message.startswith("card: greeting")
    assert "Card: greeting" in message and f"Run: {run_id}" in message
    assert git(project.root, "show", "HEAD:src/app.py") == GOOD_APP

    # The card went In Work and then Done on disk, and the clean buffer followed the file as
    # VS Code's does (no edit was sent into it: its file had changed under it): they agree.
    assert editor.edits == []
    await wait_for(lambda: editor.text(uri) == card.read_text(), what="the buffer to follow")
    fields = front_matter(editor.text(uri))
    assert fields["state"] == "Done" and fields["last_run"]["id"] == run_id
    assert card.read_text() == editor.text(uri)
    history = [p for p in editor.diagnostics if p.uri == uri]
    pending = [
        p
        for p in history
        if any(
            d.code == "criterion-1" and d.severity == S.Hint and "pending: criterion 1" in d.message
            for d in p.diagnostics
        )
    ]
    assert pending, "criteria start out pending, as a Hint: no Problems entry during a run"
    await wait_for(lambda: "result" in diag_codes(client, uri), what="the result diagnostic")
    assert diag_codes(client, uri)["result"].severity == S.Hint
    assert await lens_titles(client, uri) == ["▶ Run card", "Show last log"]
    shown_log = await command(client, "cardrunner.showLog", uri)
    assert shown_log["logPath"].endswith(f"{run_id}.jsonl")
    await wait_for(lambda: Path(shown_log["logPath"]).as_uri() in editor.shown, what="the log")
    shown_diff = await command(client, "cardrunner.showDiff", uri)
    assert shown_diff["diffPath"] == review["diffPath"]


async def test_reject_with_a_reason_goes_back_to_the_model_then_accept(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("polite", title="Be polite")
    project.transcript(
        "polite",
        [
            turn(tool("write_file", path="src/app.py", content=GOOD_APP)),
            turn(tool("git_commit", message="card: polite\n\nFirst try.")),
            turn(
                *verify_greeting(),
                tool("git_commit", message="card: polite\n\nSecond try."),
            ),
            final(),
        ],
    )
    uri = card.as_uri()  # not open in the editor: the lenses and commands decide
    result = await command(client, "cardrunner.runCard", uri)
    assert "runId" in result, result
    await wait_for(
        lambda: len(editor.reviews) == 1,
        what=lambda: f"the first review; status {editor.status[-2:]}",
    )
    await wait_for(lambda: editor.questions, what="the question (answered null: dismissed)")
    assert "✗ Reject" in await lens_titles(client, uri)
    reason = "please say hello in German too"
    assert (await command(client, "cardrunner.rejectChanges", uri, reason))["decided"]

    await wait_for(lambda: len(editor.reviews) == 2, what="the second review")
    decided = await command(client, "cardrunner.acceptChanges", uri, {"reason": "fine now"})
    assert decided["decided"]
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "done", what="done")

    commits = [
        r
        for r in project.log_lines(result["runId"])
        if r["type"] == "tool" and r["data"]["name"] == "git_commit"
    ]
    assert reason in commits[0]["data"]["result"] and "REJECTED" in commits[0]["data"]["result"]
    assert "Accepted and committed" in commits[1]["data"]["result"]
    assert git(project.root, "log", "-1", "--format=%s", "HEAD~1") == "card: polite\n"
    assert front_matter(card.read_text())["state"] == "Done"
    assert (await command(client, "cardrunner.acceptChanges", uri)).get("error")


@pytest.mark.parametrize(
    "client", ["minimal", "null-show-document", "refuses-edits"], indirect=True
)
async def test_clients_without_progress_or_show_document_still_finish(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    refuses = client.profile == "refuses-edits"  # type: ignore[attr-defined]
    editor.apply = not refuses
    card = project.write_card("greeting")
    project.transcript("greeting", happy_transcript())
    editor.answers = [ACCEPT]
    uri = editor.open(card)
    if refuses:  # unsaved edits: the state is offered to the buffer as an edit
        editor.docs[uri][0] += "\nTyped, not saved.\n"
        editor.docs[uri][1] += 1
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=editor.text(uri))
                ],
            )
        )

    result = await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "done", 30, "done")
    assert "Card: greeting" in git(project.root, "log", "-1", "--format=%B", "HEAD~1")
    if result["token"] is None:
        assert client.progress_reports == {}
    if refuses:  # asked, refused, so written on disk (and said so in the log and to the user)
        assert editor.edits and front_matter(card.read_text())["state"] == "Done"
        assert any("did not apply" in m.message for m in client.log_messages)
        assert any("buffer and the file differ" in m.message for m in client.messages)
    elif editor.show_document_null:
        assert editor.shown, "showDocument was asked and answered null"
        assert front_matter(editor.text(uri))["state"] == "Done"  # applyEdit still works
    else:
        assert result["token"] is None and editor.shown == [] and editor.edits == []
        assert editor.lens_refreshes == 0
        assert front_matter(card.read_text())["state"] == "Done"  # no applyEdit: on disk


async def test_the_question_shows_the_diff_then_rejects_then_accepts(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("asked", title="Asked twice")
    project.transcript(
        "asked",
        [
            turn(
                tool("write_file", path="src/app.py", content=GOOD_APP),
                *verify_greeting(),
            ),
            turn(tool("git_commit", message="card: asked\n\nFirst.")),
            turn(tool("git_commit", message="card: asked\n\nSecond.")),
            final(),
        ],
    )
    editor.answers = [SHOW_DIFF, REJECT, ACCEPT]
    uri = editor.open(card)
    result = await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "done", 30, "done")

    assert len(editor.questions) == 3  # asked, diff shown, asked again; then the second review
    assert editor.questions[0].actions and [a.title for a in editor.questions[0].actions] == [
        SHOW_DIFF,  # the default (first) answer is the harmless one; Accept comes last
        REJECT,
        ACCEPT,
    ]
    diff_uri = Path(editor.reviews[0]["diffPath"]).as_uri()
    assert editor.shown.count(diff_uri) >= 2  # opened at review, and again on "Show diff"
    commits = [
        r
        for r in project.log_lines(result["runId"])
        if r["type"] == "tool" and r["data"]["name"] == "git_commit"
    ]
    assert "rejected in the editor" in commits[0]["data"]["result"]
    assert git(project.root, "log", "-1", "--format=%s", "HEAD~1") == "card: asked\n"
