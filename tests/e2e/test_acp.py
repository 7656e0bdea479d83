"""`cardrunner acp` end to end: the ACP SDK's client side drives the agent as a subprocess in a
real git repository, the model's answers played from a transcript, every tool real."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from acp.schema import AgentPlanUpdate, ToolCallStart

from tests.support.acp_client import AcpClient, agent, agent_env, prompt
from tests.support.lsp import processes_with
from tests.support.project import (
    CALC,
    FIXED,
    fix_transcript,
    git,
    log_records,
    make_project,
    slow_tests,
    write_transcript,
)

RUN = "/run cards/fix-add.md"


def replay_project(root: Path, commit_attempts: int = 1) -> Path:
    """The fix-add project, its transcript in `transcripts/` (`replay` in cardrunner.toml)."""
    root.mkdir()
    card = make_project(root, top_toml='replay = "transcripts"\n')
    (root / "transcripts").mkdir()
    write_transcript(root / "transcripts" / "fix-add.json", fix_transcript(commit_attempts))
    return card


def state(card: Path) -> str:
    return str(yaml.safe_load(card.read_text().split("---")[1])["state"])


def change_commits(root: Path) -> list[str]:
    """Commits after the first that touch the code (the card's own commits do not)."""
    first = git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    return git(root, "log", "--format=%h", f"{first}..HEAD", "--", "src").split()


async def test_a_card_runs_to_done_with_the_permission_answered(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = replay_project(root)
    client = AcpClient(answers=["commit"])
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        async with asyncio.timeout(180):
            answer = await conn.prompt(session_id=session.session_id, prompt=prompt(RUN))
    assert answer.stop_reason == "end_turn"
    assert state(card) == "Done"
    # exactly one change commit, holding the fix; the card's state follows in its own commit
    assert len(change_commits(root)) == 1
    assert git(root, "show", "--name-only", "--format=", "HEAD~1").split() == ["src/calc.py"]
    assert git(root, "status", "--porcelain", "--", "src", "cards") == ""
    # the plan: every criterion pending, then in progress, then completed as evidence came
    plans = client.plans()
    assert plans[0] == [(c, "pending") for c, _ in plans[0]] and len(plans[0]) == 2
    assert any(s == "in_progress" for p in plans for _, s in p)
    assert [s for _, s in plans[-1]] == ["completed", "completed"]
    # the write as a diff with the absolute path, before and after
    calc = str((root / "src" / "calc.py").resolve())
    written = [d for d in client.diffs() if d.path == calc]
    assert written and written[0].old_text == CALC and written[0].new_text == FIXED
    # the review: the diff and the evidence, allow_once / reject_once; asked while the run
    # went on (the tool calls and plan were shown before it), not in a burst at the end
    (asked,) = client.asked
    assert {o.kind for o in asked.options} == {"allow_once", "reject_once"}
    diffs = [c for c in asked.tool_call.content or [] if getattr(c, "type", "") == "diff"]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [(calc, CALC, FIXED)]
    assert "Evidence" in json.dumps(asked.tool_call.model_dump(mode="json"))
    before = client.updates[: asked.seen]
    assert any(isinstance(u, AgentPlanUpdate) for u in before)
    assert any(isinstance(u, ToolCallStart) and u.title == "write_file src/calc.py" for u in before)
    assert len(client.updates) > asked.seen  # and the rest of the run after it
    # kinds, statuses, the runner's own checks, narration and thinking
    kinds = {u.title.split()[0]: u.kind for u in client.updates if isinstance(u, ToolCallStart)}
    assert kinds["read_file"] == "read" and kinds["write_file"] == "edit"
    assert kinds["run_tests"] == "execute" and kinds["report_criterion"] == "think"
    assert client.started("runner's checks (commit)")
    statuses = [u.status for u in client.calls() if u.tool_call_id == "toolu_tests" and u.status]
    assert statuses == ["pending", "in_progress", "completed"]
    assert "Look at the code first." in client.text("agent_thought_chunk")
    assert "RESULT: done" in client.text() and "**DONE**" in client.text()


async def test_a_reject_with_a_reason_in_the_next_prompt_leads_to_a_second_review(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = replay_project(root, commit_attempts=2)
    client = AcpClient(answers=["reject", "commit"])
    reason = "Say in the message why + is right."
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        async with asyncio.timeout(180):
            first = await conn.prompt(session_id=session.session_id, prompt=prompt(RUN))
        assert first.stop_reason == "end_turn" and len(client.asked) == 1
        assert "Why?" in client.text()
        async with asyncio.timeout(180):
            second = await conn.prompt(session_id=session.session_id, prompt=prompt(reason))
    assert second.stop_reason == "end_turn"
    assert len(client.asked) == 2
    reviews = [r["data"] for r in log_records(root) if r["type"] == "review"]
    assert [(r["decision"], r["reason"]) for r in reviews] == [("reject", reason), ("accept", "")]
    commits = [r["data"] for r in log_records(root) if r["type"] == "tool"]
    assert reason in next(c["result"] for c in commits if c["name"] == "git_commit")
    assert state(card) == "Done" and len(change_commits(root)) == 1


async def test_session_cancel_ends_the_run_cancelled_and_stops_its_commands(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    marker = f"acp-cancel-{tmp_path.name}"
    transcript = root.parent / "repo-slow.json"
    make_project(root, top_toml=f"replay = {json.dumps(str(transcript))}\n")
    slow_tests(root, marker)
    client = AcpClient()
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt(RUN)))
        await client.wait_for(lambda: bool(processes_with(marker)), "the slow tests", 120)
        await conn.cancel(session_id=session.session_id)
        async with asyncio.timeout(60):
            answer = await turn
    assert answer.stop_reason == "cancelled"
    result = [r["data"] for r in log_records(root) if r["type"] == "result"][-1]
    assert result["status"] == "failed" and result["reason"] == "cancelled"
    assert not processes_with(marker)


async def test_closing_stdin_ends_the_agent_and_leaves_no_process(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    marker = f"acp-stdin-{tmp_path.name}"
    transcript = root.parent / "repo-slow.json"
    make_project(root, top_toml=f"replay = {json.dumps(str(transcript))}\n")
    slow_tests(root, marker)
    client = AcpClient()
    async with agent(root, client) as (conn, process):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt(RUN)))
        await client.wait_for(lambda: bool(processes_with(marker)), "the slow tests", 120)
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(60):
            assert await process.wait() == 0
        turn.cancel()
    assert not processes_with(marker)
    result = [r["data"] for r in log_records(root) if r["type"] == "result"][-1]
    assert result["reason"] == "interrupted"  # the client went away: resumable


async def test_session_load_after_a_kill_replays_the_run_and_resumes_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = replay_project(root, commit_attempts=2)
    held = AcpClient()  # never answers: the agent is killed while the review waits
    async with agent(root, held) as (conn, process):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=prompt(RUN)))
        await held.wait_for(lambda: bool(held.asked), "the review", 180)
        process.kill()
        await process.wait()
        turn.cancel()
    assert state(card) == "In Work"
    client = AcpClient(answers=["commit"])
    async with agent(root, client) as (conn, _):
        async with asyncio.timeout(60):
            await conn.load_session(cwd=str(root), session_id=session.session_id, mcp_servers=[])
        replayed = len(client.updates)
        titles = [u.title for u in client.updates[:replayed] if isinstance(u, ToolCallStart)]
        assert "write_file src/calc.py" in titles and "run_tests" in titles
        assert client.plans() and "interrupted" in client.text()
        async with asyncio.timeout(180):
            answer = await conn.prompt(session_id=session.session_id, prompt=prompt("go on"))
    assert answer.stop_reason == "end_turn"
    assert "resumed after round" in client.text() and len(client.asked) == 1
    assert state(card) == "Done" and len(change_commits(root)) == 1
    assert (root / "src" / "calc.py").read_text() == FIXED


async def test_a_prompt_that_names_no_card_gets_the_cards_and_how_to_run_one(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = replay_project(root)
    client = AcpClient()
    async with agent(root, client) as (conn, _):
        session = await conn.new_session(cwd=str(root), mcp_servers=[])
        await client.wait_for(
            lambda: any(u.session_update == "available_commands_update" for u in client.updates),
            "the commands",
            30,
        )
        answer = await conn.prompt(session_id=session.session_id, prompt=prompt("hello there"))
    assert answer.stop_reason == "end_turn"
    assert "`cards/fix-add.md`" in client.text() and "/run" in client.text()
    (commands,) = [u for u in client.updates if u.session_update == "available_commands_update"]
    assert {c.name for c in commands.available_commands} == {"run", "resume", "cards", "save"}
    assert state(card) == "New" and not (root / ".cardrunner" / "runs").exists()


async def test_stdout_carries_only_json_rpc_in_the_schema_the_clients_read(
    tmp_path: Path,
) -> None:
    """Raw JSON-RPC, no SDK between: every stdout line is a JSON-RPC message, the plan entries,
    diffs and permission request carry exactly the fields the clients' SDKs parse."""
    root = tmp_path / "repo"
    card = replay_project(root)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cardrunner",
        "acp",
        cwd=root,
        env=agent_env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def until(answer_to: int) -> list[dict[str, Any]]:
        seen = []
        while True:
            async with asyncio.timeout(180):
                line = await stdout.readline()
            assert line, "the agent closed stdout early"
            message = json.loads(line)  # anything else on stdout fails here
            assert message["jsonrpc"] == "2.0"
            seen.append(message)
            if message.get("method") == "session/request_permission":
                choice = {"outcome": "selected", "optionId": "commit"}
                send({"id": message["id"], "result": {"outcome": choice}})
            if message.get("id") == answer_to and "method" not in message:
                return seen

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    (init,) = await until(1)
    capabilities = init["result"]["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert not capabilities.get("promptCapabilities", {}).get("image")
    assert capabilities["mcpCapabilities"]["http"] is True
    assert capabilities["mcpCapabilities"]["sse"] is False
    send({"id": 2, "method": "session/new", "params": {"cwd": str(root), "mcpServers": []}})
    session = (await until(2))[-1]["result"]["sessionId"]
    prompt_params = {"sessionId": session, "prompt": [{"type": "text", "text": RUN}]}
    send({"id": 3, "method": "session/prompt", "params": prompt_params})
    seen = await until(3)
    assert seen[-1]["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    plans = [u["entries"] for u in updates if u["sessionUpdate"] == "plan"]
    assert all(set(e) == {"content", "priority", "status"} for p in plans for e in p)
    assert {e["status"] for p in plans for e in p} == {"pending", "in_progress", "completed"}
    diffs = [
        c
        for u in updates
        if u["sessionUpdate"].startswith("tool_call")
        for c in u.get("content") or []
        if c["type"] == "diff"
    ]
    calc = str((root / "src" / "calc.py").resolve())
    assert {"type": "diff", "path": calc, "oldText": CALC, "newText": FIXED} in diffs
    (asked,) = [m for m in seen if m.get("method") == "session/request_permission"]
    assert {o["kind"] for o in asked["params"]["options"]} == {"allow_once", "reject_once"}
    assert any(c["type"] == "diff" for c in asked["params"]["toolCall"]["content"])
    stdin.close()
    async with asyncio.timeout(60):
        assert await proc.wait() == 0
    assert await stdout.read() == b""
    assert state(card) == "Done"


def test_requests_from_a_file_answered_into_a_file(tmp_path: Path) -> None:
    """Trying the agent by hand: stdin and stdout regular files, not the pipes editors use."""
    requests = tmp_path / "requests.jsonl"
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1},
    }
    requests.write_text(json.dumps(initialize) + "\n")
    replies = tmp_path / "replies.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "cardrunner", "acp"],
            cwd=tmp_path,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=60,
            env=agent_env(),
        )
    assert done.returncode == 0, done.stderr
    (reply,) = [json.loads(line) for line in replies.read_text().splitlines()]
    assert reply["id"] == 1 and reply["result"]["agentCapabilities"]["loadSession"] is True
