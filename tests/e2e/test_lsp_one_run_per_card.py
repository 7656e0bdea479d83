"""The editor refuses a card that another process (a CLI) is running: one run per card."""

from __future__ import annotations

import asyncio
import sys

from pytest_lsp import LanguageClient

from tests.reliability.test_one_run_per_card import HOLD
from tests.support.lsp import (
    command,
    editor_of,
    happy_transcript,
    lens_command,
    project_of,
    wait_for,
)


async def test_the_editor_refuses_a_card_a_cli_is_running(client: LanguageClient) -> None:
    project, editor = project_of(client), editor_of(client)
    card = project.write_card("greeting", title="Greeting says hello")
    project.transcript("greeting", happy_transcript())
    uri = editor.open(card)
    rel = str(card.relative_to(project.root))
    hold = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLD.replace("cards/fix-add.md", rel), str(project.root),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert hold.stdout is not None
        async with asyncio.timeout(30):
            assert await hold.stdout.readline() == b"held\n"
        run = await lens_command(client, uri, "▶ Run card")
        await command(client, run.command, *(run.arguments or []))
        await wait_for(
            lambda: any("already running" in m.message for m in client.messages),
            what="the refusal in a message",
        )
        assert "state: New" in card.read_text()
    finally:
        hold.kill()
        await hold.wait()
