"""One run core behind three front ends: the same card and transcript, run from the language
server, the CLI and the ACP agent (each a real subprocess in its own copy of the repository),
log the same events — equal once what differs by nature (times, ids, durations, the folder,
commit ids) is taken out."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from tests.support.acp_client import AcpClient, agent, prompt
from tests.support.lsp import (
    ACCEPT,
    Project,
    command,
    editor_of,
    git,
    happy_transcript,
    lens_command,
    make_project,
    project_of,
    wait_for,
)
from tests.support.project import cli

VARIES = {"time", "ms", "run_id", "commit", "workdir", "log", "started"}
"""Fields that differ between any two runs of the same thing (or name the folder or the run)."""
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
SECONDS = re.compile(r"\b\d+(\.\d+)? s\b")
"""How long a command took, as a tool's result says it."""


def normal(value: Any, root: Path) -> Any:
    """`value` with the varying fields dropped, the folder and commit ids masked."""
    if isinstance(value, dict):
        return {k: normal(v, root) for k, v in value.items() if k not in VARIES}
    if isinstance(value, list):
        return [normal(v, root) for v in value]
    if isinstance(value, str):
        text = value.replace(str(root.resolve()), "<root>").replace(str(root), "<root>")
        text = SECONDS.sub("<s>", re.sub(r"\d{8}-\d{6}-[\w.-]+", "<run>", text))
        return HEX.sub("<hex>", text)
    return value


def events(root: Path) -> list[dict[str, Any]]:
    [log] = (root / ".cardrunner" / "runs").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [normal(r, root) for r in records]


def in_place(project: Project) -> Project:
    """Run in the checkout, as the CLI and the agent do (the editor's default is a worktree,
    whose merge back is one more notice)."""
    toml = project.root / "cardrunner.toml"
    toml.write_text("isolation = false\n" + toml.read_text())
    git(project.root, "commit", "-qam", "run in place")
    return project


def copy_of(base: Path, name: str, marker: str) -> Project:
    """Another repository with the same card and transcript as the editor's."""
    project = in_place(make_project(base / name, marker))
    project.write_card("greeting", title="Greeting says hello")
    project.transcript("greeting", happy_transcript())
    return project


async def test_cli_lsp_and_acp_log_the_same_events(client: LanguageClient, tmp_path: Path) -> None:
    lsp, editor = in_place(project_of(client)), editor_of(client)
    uri = editor.open(lsp.write_card("greeting", title="Greeting says hello"))
    lsp.transcript("greeting", happy_transcript())
    editor.answers = [ACCEPT]
    run = await lens_command(client, uri, "▶ Run card")
    await command(client, run.command, *(run.arguments or []))
    await wait_for(lambda: (editor.last_status(uri) or {}).get("state") == "done", what="done")

    by_cli = copy_of(tmp_path, "cli", lsp.marker)
    done = await asyncio.to_thread(cli, by_cli.root, "run", "cards/greeting.md", "--yes")
    assert done.returncode == 0, done.stderr

    by_acp = copy_of(tmp_path, "acp", lsp.marker)
    acp_client = AcpClient(answers=["commit"])
    async with agent(by_acp.root, acp_client) as (conn, _):
        session = await conn.new_session(cwd=str(by_acp.root), mcp_servers=[])
        async with asyncio.timeout(180):
            answer = await conn.prompt(
                session_id=session.session_id, prompt=prompt("/run cards/greeting.md")
            )
    assert answer.stop_reason == "end_turn"

    from_lsp, from_cli, from_acp = events(lsp.root), events(by_cli.root), events(by_acp.root)
    kinds = [r["type"] for r in from_lsp]
    assert {"start", "round", "tool", "review", "result"} <= set(kinds)
    assert [r["type"] for r in from_cli] == kinds and [r["type"] for r in from_acp] == kinds
    for i, (a, b, c) in enumerate(zip(from_lsp, from_cli, from_acp, strict=True)):
        assert a == b, (i, "lsp vs cli", a, b)
        assert a == c, (i, "lsp vs acp", a, c)
