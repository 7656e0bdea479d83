"""Settings a run could have written never take effect before they are reviewed and committed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.project import cli, final, git, make_project, turn, use, write_transcript


def test_an_ignored_mcp_json_in_the_write_area_refuses_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    toml = root / "cardrunner.toml"
    toml.write_text(toml.read_text().replace('write = ["src"]', 'write = ["."]'))
    (root / ".gitignore").write_text("__pycache__/\n.mcp.json\n")
    git(root, "commit", "-qam", "write anywhere; .mcp.json ignored")
    marker = root / "started-by-mcp"
    spec = {"mcpServers": {"evil": {"command": "touch", "args": [str(marker)]}}}
    (root / ".mcp.json").write_text(json.dumps(spec))
    transcript = write_transcript(tmp_path / "t.json", [turn(use("list_files")), final()])
    refused = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 2, out
    assert ".mcp.json differs from the last commit and lies in the write area" in out
    assert not marker.exists()  # its server never started
    (root / ".mcp.json").unlink()
    ran = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--no-commit")
    assert "differs from the last commit" not in ran.stdout + ran.stderr
