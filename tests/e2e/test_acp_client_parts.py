"""What an ACP client brings to a run, end to end through the SDK's client side: its MCP
servers join the run's tools (in the run's sandbox), its open buffers are what `read_file`
shows (behind the path guard), and a prompt describing a card is drafted and saved on `/save`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acp import resource_link_block, text_block
from acp.schema import (
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    ToolCallStart,
)

from cardrunner.card.card import load_card
from tests.e2e.test_acp import RUN, change_commits, state
from tests.support.acp_client import AcpClient, agent, prompt
from tests.support.mcp_harness import TEST_SERVER, http_server, processes_with_arg, wait_gone
from tests.support.project import (
    CALC,
    FIXED,
    fix_transcript,
    log_records,
    make_project,
    turn,
    use,
    write_transcript,
)

UNSAVED = "def add(a, b):\n    return a - b  # typed in the editor, not saved\n"


def project(root: Path, *inserted: dict[str, object]) -> Path:
    """The fix-add project; its transcript has `inserted` rounds after the first."""
    root.mkdir()
    card = make_project(root, top_toml='replay = "transcripts"\n')
    (root / "transcripts").mkdir()
    steps = fix_transcript()
    write_transcript(root / "transcripts" / "fix-add.json", [steps[0], *inserted, *steps[1:]])
    return card


def tool_results(root: Path) -> list[tuple[str, str]]:
    return [
        (r["data"]["name"], str(r["data"]["result"]))
        for r in log_records(root)
        if r["type"] == "tool"
    ]


async def test_a_stdio_mcp_server_the_client_passes_is_called_in_the_run_inside_the_sandbox(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    hook, outside = root / ".git" / "hooks" / "acp-marker", tmp_path / "acp-outside-marker"
    card = project(
        root,
        turn(
            use("mcp__panel__echo", "toolu_mcp", text="from the panel"),
            use("mcp__panel__touch", path=str(hook)),
            use("mcp__panel__touch", path=str(outside)),
        ),
    )
    server = McpServerStdio(
        name="panel",
        command=sys.executable,
        args=[str(TEST_SERVER)],
        env=[EnvVariable(name="MCP_TEST_GIVEN", value="by the client")],
    )
    client = AcpClient(answers=["commit"])
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[server])
        async with asyncio.timeout(180):
            answer = await conn.prompt(session_id=session.session_id, prompt=prompt(RUN))
    assert answer.stop_reason == "end_turn" and state(card) == "Done"
    assert len(change_commits(root)) == 1
    started = next(r["data"] for r in log_records(root) if r["type"] == "start")
    assert "mcp__panel__echo" in started["tools"]
    results = tool_results(root)
    assert ("mcp__panel__echo", "from the panel") in results
    # the client's server is confined like the project's: .git is read-only to it (the test
    # runs as a user who could write it), a file outside lands in its private /tmp
    assert not hook.exists() and not outside.exists()
    assert next(r for n, r in results if n == "mcp__panel__touch").startswith("refused")
    shown = [u for u in client.updates if isinstance(u, ToolCallStart)]
    assert any(u.title.startswith("mcp__panel__echo") for u in shown)
    assert wait_gone(processes_with_arg(str(TEST_SERVER))) == []  # it ended with the run


async def test_an_http_mcp_server_the_client_passes_gets_the_clients_headers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    header = {"type": "tool_use", "name": "mcp__web__header", "input": {"name": "authorization"}}
    card = project(root, turn(header))
    client = AcpClient(answers=["commit"])
    with http_server(tmp_path / "http") as (url, _):
        server = HttpMcpServer(
            type="http",
            name="web",
            url=url,
            headers=[HttpHeader(name="Authorization", value="Bearer ${ANTHROPIC_API_KEY}")],
        )
        async with agent(root, client) as (conn, _):
            session = await conn.new_session(cwd=str(root), mcp_servers=[server])
            async with asyncio.timeout(180):
                answer = await conn.prompt(session_id=session.session_id, prompt=prompt(RUN))
    assert answer.stop_reason == "end_turn" and state(card) == "Done"
    # the header as the client sent it: nothing of the agent's environment is filled in
    assert ("mcp__web__header", "Bearer ${ANTHROPIC_API_KEY}") in tool_results(root)


async def test_read_file_shows_the_clients_unsaved_buffer_behind_the_path_guard(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (tmp_path / "outside.txt").write_text("kept-outside\n")
    card = project(
        root,
        turn(use("read_file", path="../outside.txt"), use("read_file", path=".git/config")),
    )
    calc = str((root / "src" / "calc.py").resolve())
    client = AcpClient(answers=["commit"], buffers={calc: UNSAVED})
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    async with agent(root, client, reads) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        async with asyncio.timeout(180):
            answer = await conn.prompt(session_id=session.session_id, prompt=prompt(RUN))
    assert answer.stop_reason == "end_turn" and state(card) == "Done"
    assert client.read == [calc]  # the refused reads never reached the client
    read = [r for n, r in tool_results(root) if n == "read_file"]
    assert len(read) == 3 and not any("kept-outside" in r or "[core]" in r for r in read)
    assert UNSAVED in read[-1] and "changes not saved yet" in read[-1]
    # the review and the commit are of the bytes on disk, not of the buffer
    (asked,) = client.asked
    diffs = [c for c in asked.tool_call.content or [] if getattr(c, "type", "") == "diff"]
    assert [(d.old_text, d.new_text) for d in diffs] == [(CALC, FIXED)]
    assert (root / "src" / "calc.py").read_text() == FIXED


async def test_a_card_described_with_a_card_open_is_drafted_and_saved_on_save(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = project(root)
    client = AcpClient()
    description = "Subtract two numbers\n- `sub(3, 1)` returns 2.\n- The tests pass."
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        mention = resource_link_block("fix-add.md", card.as_uri())
        drafted = await conn.prompt(
            session_id=session.session_id, prompt=[mention, text_block(description)]
        )
        assert drafted.stop_reason == "end_turn"
        assert sorted(p.name for p in (root / "cards").iterdir()) == ["fix-add.md"]
        assert 'title: "Subtract two numbers"' in client.text()
        assert "`/save`" in client.text()
        saved = await conn.prompt(session_id=session.session_id, prompt=prompt("/save"))
    assert saved.stop_reason == "end_turn"
    new = root / "cards" / "subtract-two-numbers.md"
    assert "Saved as `cards/subtract-two-numbers.md`" in client.text()
    written = load_card(new)
    assert written.title == "Subtract two numbers" and written.state == "New"
    assert written.criteria == ["`sub(3, 1)` returns 2.", "The tests pass."]
    assert state(card) == "New" and not (root / ".cardrunner" / "runs").exists()
