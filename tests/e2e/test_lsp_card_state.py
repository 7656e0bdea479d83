"""The card's state reaches the disk, and the open buffer never disagrees with it silently.

A clean buffer: the file is written; an editor that reloads clean buffers (VS Code, Emacs and
Neovim as docs/editors.md sets them up, this test client by default) follows it, one that does
not (this client with `reloads` off) gets no edit — its file changed under it — and is told
once to reload.
A buffer with unsaved edits: only the buffer gets the state, and a warning says so.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    command,
    editor_of,
    front_matter,
    processes_with,
    project_of,
    slow_transcript,
    wait_for,
)


async def start_slow(client: LanguageClient) -> tuple[Path, str]:
    project = project_of(client)
    card = project.write_card("slow")
    project.transcript("slow", slow_transcript())
    return card, card.as_uri()


async def test_a_clean_buffer_that_does_not_follow_gets_no_edit_and_the_user_is_told_once(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card, uri = await start_slow(client)
    editor.reloads = False
    editor.open(card)
    as_opened = editor.text(uri)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the run in its tests")
    assert front_matter(card.read_text())["state"] == "In Work", "on disk while it runs"

    def told() -> list[str]:
        return [m.message for m in client.messages if "reload it" in m.message]

    await wait_for(told, what="the word to reload the buffer")
    assert "In Work on disk" in told()[0]
    assert editor.edits == [], "no edit into a buffer whose file changed under it"
    await command(client, "cardrunner.cancelRun", uri)
    await wait_for(lambda: front_matter(card.read_text())["state"] == "Failed", what="the end")
    assert editor.text(uri) == as_opened, "the buffer is as the user left it: unmodified"
    assert len(told()) == 1, "told once, not at every state"


async def test_an_editor_that_reloads_gets_no_edit_at_all(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card, uri = await start_slow(client)
    editor.open(card)
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the run in its tests")
    await wait_for(lambda: front_matter(editor.text(uri)).get("state") == "In Work", 20)
    await command(client, "cardrunner.cancelRun", uri)
    await wait_for(lambda: front_matter(editor.text(uri)).get("state") == "Failed", 20)
    assert not [m for m in client.messages if "reload it" in m.message], "nothing to say"
    assert editor.edits == [], "the clean buffer followed the file: nothing to apply"
    assert editor.text(uri) == card.read_text()


async def test_unsaved_edits_keep_the_file_and_say_the_state_is_in_the_buffer(
    client: LanguageClient,
) -> None:
    project, editor = project_of(client), editor_of(client)
    card, uri = await start_slow(client)
    editor.open(card)
    typed = editor.text(uri).replace("should be friendly.", "should be friendly, and short.")
    editor.docs[uri] = [typed, 2]
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=typed)],
        )
    )
    on_disk = card.read_text()
    await command(client, "cardrunner.runCard", uri)
    await wait_for(lambda: processes_with(project.marker), what="the run in its tests")

    assert card.read_text() == on_disk, "nothing written behind the unsaved edits"
    buffer = editor.text(uri)
    assert "and short." in buffer and front_matter(buffer)["state"] == "In Work"
    warned = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("unsaved changes" in m and "In Work" in m for m in warned), warned
    await command(client, "cardrunner.cancelRun", uri)
    await wait_for(lambda: front_matter(editor.text(uri))["state"] == "Failed", what="the end")
    assert card.read_text() == on_disk
