"""docs/acp.md's configurations start what the CLI knows: `cardrunner acp`, in every client."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cardrunner.cli import serve
from cardrunner.cli.main import _parser

DOC = Path(__file__).resolve().parents[3] / "docs" / "acp.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_json_configurations_parse_and_start_the_agent() -> None:
    found = [json.loads(b) for b in blocks("json")]
    assert len(found) == 2  # Zed's settings.json, JetBrains' acp.json
    for config in found:
        (server,) = config["agent_servers"].values()
        assert server["command"] == "cardrunner" and server["args"] == ["acp"]
        assert _parser().parse_args(server["args"]).verb is serve.run_acp
    assert found[0]["agent_servers"]["cardrunner"]["type"] == "custom"  # Zed's custom agent


def test_the_lua_and_elisp_configurations_start_the_same_command() -> None:
    (lua,) = blocks("lua")
    assert 'commands = { default = { "cardrunner", "acp" } }' in lua
    (elisp,) = blocks("elisp")
    assert ':command "cardrunner"' in elisp and ':command-params \'("acp")' in elisp
