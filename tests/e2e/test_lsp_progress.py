"""Progress when the client loses our `window/workDoneProgress/create` (lsp-mode 8 drops one that
arrives in the same read as the command's answer): the server asks again with a new token, and
the run's progress begins, reports and ends under that one."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import (
    ACCEPT,
    command,
    editor_of,
    happy_transcript,
    project_of,
    wait_for,
)


def lose_the_first_create(client: LanguageClient, release: asyncio.Event) -> list[str]:
    """Answer every `create` but the first, which waits (unanswered) until `release`."""
    asked: list[str] = []
    features = client.protocol.fm.features
    default = features[types.WINDOW_WORK_DONE_PROGRESS_CREATE]

    async def create(params: types.WorkDoneProgressCreateParams) -> Any:
        asked.append(str(params.token))
        if len(asked) == 1:
            await release.wait()  # the answer is lost: the server gives up on it
            return None
        return default(params)

    features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = create
    return asked


async def test_a_lost_progress_create_is_retried_with_a_new_token(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    release = asyncio.Event()
    asked = lose_the_first_create(client, release)
    card = project.write_card("greeting")
    project.transcript("greeting", happy_transcript())
    editor.answers = [ACCEPT]
    try:
        started = await command(client, "cardrunner.runCard", card.as_uri())
        retried = f"{started['token']}#2"
        reports = await wait_for(
            lambda: (r := client.progress_reports.get(retried)) and r[-1].kind == "end" and r,
            40,
            lambda: f"the progress under {retried} to end; creates {asked}",
        )
    finally:
        release.set()
    assert asked == [started["token"], retried]
    assert [r.kind for r in reports[:1]] == ["begin"] and reports[-1].kind == "end"
    assert any(r.kind == "report" for r in reports)
    assert "done" in (reports[-1].message or "")
    assert client.progress_reports.get(started["token"]) is None, "nothing under the lost token"
