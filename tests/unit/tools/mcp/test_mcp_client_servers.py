"""A server an ACP client passed: its values are the client's, literal; ours are not filled in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cardrunner.config.settingsfiles import CLIENT_SOURCE, McpServer
from cardrunner.processes.groups import ProcessGroups
from cardrunner.tools.mcp.hub import McpHub
from tests.support.mcp_harness import TEST_SERVER, recorded_pids, wait_gone


async def test_a_client_servers_values_are_literal_and_get_none_of_our_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SOME_TOKEN", "ours")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    spec = McpServer(
        command=sys.executable,
        args=[str(TEST_SERVER)],
        env={"TOKEN": "${SOME_TOKEN}", "GIVEN": "by the client"},
        source=CLIENT_SOURCE,
    )
    async with McpHub({"c": spec}, run_dir, tmp_path, groups=ProcessGroups()) as hub:
        assert hub.failures == {}  # a secret-looking ${VAR} is no refusal: nothing is filled
        result = await hub.call("c", "environment", {})
    env = dict(line.split("=", 1) for line in result.text.splitlines())
    assert env["TOKEN"] == "${SOME_TOKEN}" and env["GIVEN"] == "by the client"
    assert "ours" not in result.text and "sk-ant-secret" not in result.text
    assert env["CARDRUNNER_RUN_DIR"] == str(run_dir)
    assert wait_gone(recorded_pids(run_dir)) == []
