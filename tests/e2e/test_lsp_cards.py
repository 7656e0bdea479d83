"""Cards without runs: diagnostics on the right lines, the watcher, settings, start-up."""

from __future__ import annotations

import os
import shutil

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    CARD,
    command,
    diags,
    editor_of,
    lens_titles,
    project_of,
    wait_for,
)

S = types.DiagnosticSeverity

UNKNOWN_STATE = """---
title: Broken state
state: Doing
---
Text.

## Acceptance criteria

- Something works.
"""

NO_FRONT_MATTER = "Just some notes, no front matter.\n"


async def test_broken_cards_written_outside_the_editor_get_diagnostics(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    state_uri = project.write_card("state", UNKNOWN_STATE).as_uri()
    bare_uri = project.write_card("bare", NO_FRONT_MATTER).as_uri()

    [problem] = await wait_for(lambda: diags(client, state_uri), what="the watcher")
    assert problem.range.start.line == 2 and "unknown state" in problem.message
    assert problem.severity == S.Error and problem.source == "cardrunner"
    [missing] = await wait_for(lambda: diags(client, bare_uri), what="the second card")
    assert missing.range.start.line == 0 and "front matter" in missing.message
    assert await lens_titles(client, state_uri) == []

    # An editor-style atomic save (temp file + rename) that fixes the card clears them.
    temp = project.root / "cards" / ".state.md.tmp"
    temp.write_text(CARD.format(title="Fixed"))
    os.replace(temp, project.card("state"))
    await wait_for(lambda: not diags(client, state_uri), what="the fix to be seen")
    assert await lens_titles(client, state_uri) == ["▶ Run card"]

    project.card("bare").unlink()
    await wait_for(lambda: bare_uri in client.diagnostics and not diags(client, bare_uri))


async def test_a_card_left_in_work_says_interrupted_and_offers_resume(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    text = CARD.format(title="Stuck").replace("state: New", "state: In Work")
    uri = editor.open(project.write_card("stuck", text))
    [warning] = await wait_for(lambda: diags(client, uri), what="the interrupted warning")
    assert warning.range.start.line == 2 and warning.severity == S.Warning
    assert warning.message.startswith("interrupted — resume or reset")
    assert await lens_titles(client, uri) == ["▶ Run card", "Resume"]

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert [a.title for a in actions or []] == ["▶ Run card", "Resume"]


async def test_start_up_does_not_import_anthropic_or_mcp(client: LanguageClient) -> None:
    modules = await command(client, "cardrunner.debug.modules")
    assert modules["atInitialize"] == {"anthropic": False, "mcp": False}

    # Runs execute in worker processes: nothing imports them here after start-up either.
    await wait_for(
        lambda: any(" serving " in m.message for m in client.log_messages), 60, "the start-up"
    )
    later = await command(client, "cardrunner.debug.modules")
    assert later["now"] == {"anthropic": False, "mcp": False}
    assert not {"anthropic", "mcp"} & set(later["topLevel"])


async def test_invalid_settings_warn_and_keep_defaults(client: LanguageClient) -> None:
    client.set_configuration({"limits": {"max_rounds": "lots"}}, section="cardrunner")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    warning = await wait_for(
        lambda: [m for m in client.messages if "invalid settings" in m.message],
        what="the settings warning",
    )
    assert warning[0].type == types.MessageType.Warning
    assert "limits.max_rounds" in warning[0].message
    uri = project_of(client).write_card("after").as_uri()
    assert await lens_titles(client, uri) == ["▶ Run card"]


async def test_without_a_transcript_or_key_a_run_names_the_key(client: LanguageClient) -> None:
    project = project_of(client)
    toml = project.root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('replay = "transcripts"\n', ""))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    uri = project.write_card("keyless").as_uri()

    async def refused() -> str:
        result = await command(client, "cardrunner.runCard", uri)
        if "runId" in result:  # settings not re-read yet: that run fails for the transcript
            await wait_for(
                lambda: (editor_of(client).last_status(uri) or {}).get("state") == "failed"
            )
        return str(result.get("error", ""))

    for _ in range(50):
        error = await refused()
        if "ANTHROPIC_API_KEY" in error:
            break
    assert "ANTHROPIC_API_KEY" in error
    assert any("ANTHROPIC_API_KEY" in m.message for m in client.messages)


async def test_an_opened_card_always_gets_its_diagnostics_even_none(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    uri = editor.open(project.write_card("clean"))
    await wait_for(lambda: uri in client.diagnostics, what="a publish for the opened card")
    assert diags(client, uri) == []
    assert await lens_titles(client, uri) == ["▶ Run card"]


async def test_the_cards_folder_deleted_and_made_again_is_watched_again(
    client: LanguageClient,
) -> None:
    project = project_of(client)
    first = project.write_card("first", UNKNOWN_STATE).as_uri()
    await wait_for(lambda: diags(client, first), what="the first card")
    shutil.rmtree(project.root / "cards")
    await wait_for(lambda: not diags(client, first), what="the deleted card to lose its problems")

    (project.root / "cards").mkdir()
    second = project.write_card("second", UNKNOWN_STATE).as_uri()
    [problem] = await wait_for(lambda: diags(client, second), what="a card in the new folder")
    assert problem.range.start.line == 2
