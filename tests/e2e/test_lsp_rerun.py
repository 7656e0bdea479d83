"""Running a card that is already Done from the editor: it runs (the click asked for it), and the
editor is warned that an accepted review would commit a second change."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import CARD, command, editor_of, final, project_of, wait_for


def warnings_about(client: LanguageClient, title: str) -> list[str]:
    return [
        m.message
        for m in client.messages
        if m.type == types.MessageType.Warning and f"{title} was already Done" in m.message
    ]


async def test_a_done_card_runs_again_with_a_warning(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    done = project.write_card("again", CARD.format(title="Once more").replace("New", "Done"))
    fresh = project.write_card("fresh", title="First time")
    for name in ("again", "fresh"):
        project.transcript(name, [final("RESULT: failed: nothing to do")])
    for card, title in ((done, "Once more"), (fresh, "First time")):
        uri = editor.open(card)
        await command(client, "cardrunner.runCard", uri)
        await wait_for(
            lambda uri=uri: (editor.last_status(uri) or {}).get("state") == "failed",
            30,
            f"the run of {title} to end",
        )
    assert len(warnings_about(client, "Once more")) == 1
    assert "commits a second change" in warnings_about(client, "Once more")[0]
    assert warnings_about(client, "First time") == []
