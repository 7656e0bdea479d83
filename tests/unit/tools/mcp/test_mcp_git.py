"""McpHub with a real third-party server: `mcp-server-git` from the venv, on a repo in tmp_path."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.agent.toolpool import ToolPool
from cardrunner.config.settingsfiles import McpServer
from cardrunner.processes.groups import ProcessGroups
from cardrunner.tools.mcp.hub import McpHub
from tests.support.mcp_harness import context, processes_with_arg, wait_gone

GIT_TOOLS = {
    "git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_commit", "git_add",
    "git_reset", "git_log", "git_create_branch", "git_checkout", "git_show", "git_branch",
}  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit, a modified file and an untracked one."""
    root = tmp_path / "repo"
    root.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "test@example.com")
    git("config", "user.name", "Test")
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    (root / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "new.txt").write_text("new\n", encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def started(repo: Path) -> Iterator[list[int]]:
    """Pids of the git servers a test started; those and any process serving `repo` must end."""
    pids: list[int] = []
    yield pids
    assert pids, "the test recorded no server pid"
    left = wait_gone([*pids, *processes_with_arg(str(repo))])
    assert left == [], f"mcp-server-git outlived the hub: {left}"


def git_hub(repo: Path, tmp_path: Path) -> McpHub:
    spec = McpServer(
        command=sys.executable, args=["-m", "mcp_server_git", "--repository", str(repo)]
    )
    return McpHub({"git": spec}, tmp_path / "run", repo, groups=ProcessGroups())


async def test_git_tools_are_listed_and_status_is_plain_text(
    repo: Path, tmp_path: Path, started: list[int]
) -> None:
    async with git_hub(repo, tmp_path) as h:
        started.extend(h.pids().values())
        assert h.failures == {}
        names = {t.name for t in h.tools()}
        pool = ToolPool(h.tools())
        status = await pool.execute("mcp__git__git_status", {"repo_path": str(repo)}, context())
        diff = await pool.execute(
            "mcp__git__git_diff_unstaged", {"repo_path": str(repo)}, context()
        )
    assert names == {f"mcp__git__{t}" for t in GIT_TOOLS}
    assert not status.is_error
    assert "\n" in status.text and "\\n" not in status.text and not status.text.startswith('"')
    assert "modified:   a.txt" in status.text and "new.txt" in status.text
    assert "\n+two\n" in diff.text or diff.text.rstrip().endswith("+two")


async def test_git_unknown_tool_is_a_protocol_error_turned_into_is_error(
    repo: Path, tmp_path: Path, started: list[int]
) -> None:
    async with git_hub(repo, tmp_path) as h:
        started.extend(h.pids().values())
        unknown = await h.call("git", "nope", {})
        outside = await h.call("git", "git_status", {"repo_path": str(tmp_path)})
        after = await h.call("git", "git_status", {"repo_path": str(repo)})
    # mcp-server-git raises a JSON-RPC error (-32602) where our own server returns is_error.
    assert unknown.is_error
    assert unknown.text.startswith("MCP server 'git' rejected the call to nope:")
    assert "(code -32602)" in unknown.text
    assert outside.is_error and "Error executing tool git_status" in outside.text
    assert not after.is_error  # a rejected call does not harm the connection
