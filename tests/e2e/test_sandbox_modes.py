"""The sandbox mode, as the user meets it: `cardrunner check`, the editor's status, a refused run."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pytest_lsp import LanguageClient

from tests.support.lsp import editor_of, wait_for
from tests.support.project import cli, final, make_project, turn, use, write_transcript


def test_check_names_the_sandbox_mode(tmp_path: Path) -> None:
    make_project(tmp_path)
    shown = cli(tmp_path, "check", ".")
    assert shown.returncode == 0, shown.stdout
    assert "sandbox: bubblewrap (no network;" in shown.stdout
    (tmp_path / "cardrunner.toml").write_text(
        'sandbox = "off"\n' + (tmp_path / "cardrunner.toml").read_text()
    )
    assert 'sandbox: off (sandbox = "off"' in cli(tmp_path, "check", ".").stdout


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with git and the interpreter's folder, but no bubblewrap."""
    tools = tmp_path / "tools"
    tools.mkdir()
    git = shutil.which("git")
    assert git is not None
    (tools / "git").symlink_to(git)
    return os.pathsep.join([str(tools), str(Path(sys.executable).parent)])


def test_a_run_is_refused_where_bubblewrap_cannot_start_unless_the_settings_say_off(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    make_project(root)
    transcript = write_transcript(tmp_path / "t.json", [turn(use("run_tests")), final()])
    env = {"PATH": _path_without_bwrap(tmp_path)}
    refused = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes", env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    out = refused.stdout + refused.stderr
    assert "bubblewrap (bwrap) is not installed" in out and 'sandbox = "off"' in out
    checked = cli(root, "check", ".", env=env)
    assert checked.returncode == 1 and "sandbox: unavailable" in checked.stdout
    toml = root / "cardrunner.toml"
    toml.write_text('sandbox = "off"\n' + toml.read_text())
    ran = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--no-commit", env=env)
    assert ran.returncode in (0, 1) and "bubblewrap" not in ran.stdout + ran.stderr
    assert "config_error" not in ran.stdout + ran.stderr


async def test_the_editor_status_carries_the_sandbox_mode(client: LanguageClient) -> None:
    editor = editor_of(client)
    await wait_for(lambda: editor.status, what="a runStatus notification")
    assert editor.status[-1]["sandbox"].startswith("sandbox: bubblewrap")
