"""`cardrunner acp` driven by the official TypeScript ACP client library, `@agentclientprotocol/sdk`
from the npm registry (installed here, into a temporary folder): what the SDK parses is what
Zed-like clients built on it show, and it drops updates that do not match its schema."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.project import CALC, FIXED, fix_transcript, git, make_project, write_transcript

SDK = "@agentclientprotocol/sdk@2"
SCRIPT = Path(__file__).resolve().parents[1] / "support" / "acp_client.mjs"


@pytest.fixture(scope="module")
def typescript_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client script beside its own node_modules with the SDK from the registry."""
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "node and npm are needed for the TypeScript SDK"
    folder = tmp_path_factory.mktemp("ts-acp-client")
    subprocess.run(
        [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--silent", SDK],
        check=True,
        timeout=300,
    )
    return Path(shutil.copy(SCRIPT, folder / SCRIPT.name))


def run_client(script: Path, root: Path, text: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(script), sys.executable, str(root), text],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_typescript_sdk_runs_a_card_to_done(typescript_client: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root, top_toml='replay = "transcripts"\n')
    (root / "transcripts").mkdir()
    write_transcript(root / "transcripts" / "fix-add.json", fix_transcript())

    result = run_client(typescript_client, root, "/run cards/fix-add.md")

    assert result["stop"] == {"stopReason": "end_turn"} and result["exitCode"] == 0
    assert result["init"]["agentCapabilities"]["loadSession"] is True
    updates = result["updates"]
    plans = [[e["status"] for e in u["entries"]] for u in updates if u["sessionUpdate"] == "plan"]
    assert plans[0] == ["pending", "pending"] and plans[-1] == ["completed", "completed"]
    calc = str((root / "src" / "calc.py").resolve())
    diffs = [
        c
        for u in updates
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
        for c in u.get("content") or []
        if c["type"] == "diff"
    ]
    assert {"type": "diff", "path": calc, "oldText": CALC, "newText": FIXED} in diffs
    (asked,) = result["asked"]
    assert 0 < asked["seen"] < len(updates)  # asked while the run went on
    assert any(c["type"] == "diff" for c in asked["toolCall"]["content"])
    first = git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert len(git(root, "log", "--format=%h", f"{first}..HEAD", "--", "src").split()) == 1
    assert "state: Done" in (root / "cards" / "fix-add.md").read_text()
