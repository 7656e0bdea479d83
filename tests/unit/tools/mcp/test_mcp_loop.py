"""An MCP tool through the real runner and loop: a scripted model calls `mcp__git__git_status`
on mcp-server-git, and the next request carries the plain-text result."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cardrunner.agent.events import RunFinished, RunStarted
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.mcp_harness import processes_with_arg, wait_gone

CARD = """---
title: Look at the repository
state: New
category: Chore
---
Tell me what git says.

**Acceptance criteria**

- The status was read.
"""


def make_workspace(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "cards").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "cards" / "look.md").write_text(CARD, encoding="utf-8")
    args = ["-m", "mcp_server_git", "--repository", str(root)]
    (root / "cardrunner.toml").write_text(
        "require_evidence = false\n\n[mcp.git]\n"
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\nrequired = true\n",
        encoding="utf-8",
    )
    (root / ".gitignore").write_text(".cardrunner/\n", encoding="utf-8")
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "dev@example.com"],
        ["config", "user.name", "Dev"],
        ["add", "-A"],
        ["commit", "-q", "-m", "initial"],
    ):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    (root / "notes.txt").write_text("untracked\n", encoding="utf-8")  # for git to report
    return root / "cards" / "look.md"


@pytest.fixture(autouse=True)
def no_server_left(tmp_path: Path) -> Iterator[None]:
    """No process serving the test's workspace may outlive the test."""
    yield
    assert wait_gone(processes_with_arg(str(tmp_path / "ws"))) == []


def tool_result_text(request: dict[str, Any]) -> tuple[str, bool]:
    """The text and error flag of the single tool_result in the request's last user turn."""
    [block] = [b for b in request["messages"][-1]["content"] if b["type"] == "tool_result"]
    content = block["content"]
    text = content if isinstance(content, str) else "".join(c["text"] for c in content)
    return text, bool(block.get("is_error", False))


async def test_scripted_model_calls_git_status_and_reads_plain_text(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    card = make_workspace(root)
    settings, problems = load_settings(root)
    assert not problems
    servers: list[int] = []

    def answer(body: dict[str, Any], index: int) -> dict[str, Any]:
        servers.extend(processes_with_arg(str(root)))  # the git server, alive mid-run
        return {"content": [{"type": "text", "text": "Read it.\nRESULT: done"}]}

    model = ScriptedModel(
        [
            {
                "content": [
                    {
                        "type": "tool_use",
                        "name": "mcp__git__git_status",
                        "input": {"repo_path": str(root)},
                    }
                ],
                "stop_reason": "tool_use",
            },
            answer,
        ]
    )
    options = RunOptions(
        root=root, card_path=card, settings=settings, model=model, approver=AutoApprover()
    )
    events = [e async for e in run_card(options)]
    model.assert_complete()

    started = next(e for e in events if isinstance(e, RunStarted))
    assert "mcp__git__git_status" in started.tools
    text, is_error = tool_result_text(model.requests[1])
    assert not is_error
    assert text.startswith("Repository status:\nOn branch main\n")
    assert "notes.txt" in text and "\\n" not in text
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    assert servers, "the git server was not running during the run"
    assert wait_gone(servers) == [], "the git server outlived the run"
