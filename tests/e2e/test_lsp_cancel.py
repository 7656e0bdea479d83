"""Cancel from the progress UI or the command; several cards at once.

The transcript calls `run_tests`, configured as a 30 s sleep whose command line carries a
marker unique to the test, so a /proc scan proves the process is gone after the cancel.
"""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from cardrunner.card.card import card_slug
from cardrunner.git.branches import BranchRepo
from tests.support.lsp import (
    ACCEPT,
    GOOD_APP,
    command,
    diag_codes,
    editor_of,
    final,
    front_matter,
    lens_command,
    lens_titles,
    processes_with,
    project_of,
    slow_transcript,
    tool,
    turn,
    verify_greeting,
    wait_for,
)


async def test_cancel_from_the_progress_ui(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    uri = editor.open(card)
    result = await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")
    cancel, summary = await lens_titles(client, uri)
    assert cancel == "■ Cancel" and summary.startswith("round 1/12 · ")

    client.window_work_done_progress_cancel(
        types.WorkDoneProgressCancelParams(token=result["token"])
    )
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", what="stop")
    assert editor.last_status(uri)["reason"] == "cancelled"  # type: ignore[index]
    await wait_for(lambda: not processes_with(project.marker), 10, "the sleep to be gone")
    fields = front_matter(editor.text(uri))
    assert fields["state"] == "Failed" and fields["reason"] == "cancelled"
    reports = await wait_for(
        lambda: (r := client.progress_reports.get(result["token"])) and r[-1].kind == "end" and r,
        what="the progress to end",
    )
    assert "cancelled" in (reports[-1].message or "")
    assert "Resume" in await lens_titles(client, uri)
    assert diag_codes(client, uri)["result"].message.startswith("failed (cancelled)")


async def test_cancel_with_the_command_stops_the_process_group(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    uri = card.as_uri()
    await command(client, "cardrunner.runCard", uri)
    assert (await command(client, "cardrunner.runCard", uri)).get("error"), "one run per card"
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")

    assert (await command(client, "cardrunner.cancelRun", uri))["cancelled"]
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "failed", what="stop")
    await wait_for(lambda: not processes_with(project.marker), 10, "the sleep to be gone")
    fields = front_matter(card.read_text())
    assert fields["state"] == "Failed" and fields["reason"] == "cancelled"
    assert fields["last_run"]["reason"] == "cancelled"
    assert not (await command(client, "cardrunner.cancelRun", uri))["cancelled"]


async def test_two_cards_run_while_a_third_card_gets_its_lenses(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    uris = []
    for name in ("first", "second"):
        uris.append(project.write_card(name).as_uri())
        project.transcript(name, slow_transcript())
    third = project.write_card("third").as_uri()
    for uri in uris:
        await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: len(processes_with(project.marker)) == 2, 60, "both runs in tests")

    assert await lens_titles(client, third) == ["▶ Run card"]
    for uri in uris:
        assert (await lens_titles(client, uri))[0] == "■ Cancel"
        assert (editor.last_status(uri) or {}).get("state") == "running"

    for uri in uris:
        await command(client, "cardrunner.cancelRun", uri)
    for uri in uris:
        await wait_for(lambda u=uri: (editor.last_status(u) or {}).get("reason") == "cancelled")
    await wait_for(lambda: not processes_with(project.marker), 10, "the sleeps to be gone")


async def test_a_cancelled_run_resumes_from_its_log_to_done(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("again")
    project.transcript(
        "again",
        [
            turn(tool("run_tests")),  # cancelled while it sleeps
            turn(
                tool("write_file", path="src/app.py", content=GOOD_APP),
                *verify_greeting(),
                tool("git_commit", message="card: again\n\nSay hello with the name."),
            ),
            final(),
        ],
    )
    editor.answers = [ACCEPT]  # the resumed run commits after review
    uri = editor.open(card)
    first = await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")
    await command(client, "cardrunner.cancelRun", uri)
    await wait_for(lambda: (editor.last_status(uri) or {}).get("reason") == "cancelled")

    resume = await lens_command(client, uri, "Resume")
    resumed = await command(client, resume.command, *(resume.arguments or []))
    assert "runId" in resumed, resumed
    await wait_for(
        lambda: (editor.last_status(uri) or {}).get("state") == "done",
        what=lambda: f"the resumed run to end done: {editor.last_status(uri)}",
    )
    status = editor.last_status(uri) or {}
    assert status["runId"] == first["runId"] and status["round"] == 3
    fields = front_matter(editor.text(uri))
    assert fields["state"] == "Done"
    assert fields["last_run"]["result"] == "done" and fields["last_run"]["id"] == first["runId"]
    history = await BranchRepo(project.root).card_runs(card_slug(card, project.root))
    assert [r.result for r in history] == ["done"]  # the cancelled run was undone: no commit
    await wait_for(lambda: not processes_with(project.marker), 10, "no sleep left")


async def test_shutdown_cancels_running_cards_and_writes_them_to_disk(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    uri = editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the slow test command")

    await client.shutdown_async(None)
    client.shut_down = True  # type: ignore[attr-defined]
    assert not processes_with(project.marker)
    fields = front_matter(card.read_text())  # the editor closing is no cancel of the user's:
    assert fields["state"] == "Failed" and fields["reason"] == "interrupted"  # resumable
