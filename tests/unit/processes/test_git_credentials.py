"""git's credentials are out of every sandboxed command's reach while git itself still works.

`actions/checkout` persists the job's token in `.git/config` as an `extraheader`; a clone URL,
an `insteadOf` rewrite, a credential helper's store or an included file can hold one too. The
config is real (written by `git config`), the commands run under bwrap for real.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from cardrunner.config.secrets import redact
from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.command import run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.hiding import GitConfig, git_config_files
from cardrunner.processes.sandbox import Sandbox

TOKEN = "ghs_T0k3nFr0mActi0nsCheck0utXyZ12345678"
HEADER = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
URL_PASSWORD = "url-password-9876543210"
REWRITE_PASSWORD = "rewrite-password-24680"
INCLUDED = "glpat-includedTokenIncludedToken12"
GROUPS = ProcessGroups()


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def checked_out(root: Path, tmp_path: Path) -> Path:
    """A repository configured as a CI job's checkout leaves it, with every credential kind."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("hello\n")
    git(root, "add", "-A")
    git(root, "-c", "user.email=a@b.c", "-c", "user.name=A", "commit", "-qm", "first")
    git(root, "tag", "v1.2.3")
    extra = tmp_path / "extra.gitconfig"
    extra.write_text(
        f'[http]\n\textraheader = "PRIVATE-TOKEN: {INCLUDED}"\n[core]\n\tabbrev = 12\n'
    )
    for key, value in [
        ("http.https://github.com/.extraheader", f"AUTHORIZATION: basic {HEADER}"),
        ("remote.Upstream.url", f"https://x-access-token:{URL_PASSWORD}@github.com/o/r.git"),
        (f"url.https://bob:{REWRITE_PASSWORD}@example.com/.insteadOf", "https://example.com/"),
        ("credential.helper", f"store --file {tmp_path / 'store'}"),
        ("credential.https://github.com.username", "x-access-token"),
        ("include.path", str(extra)),
        ("user.name", 'Quote "and" \\ backslash'),
    ]:
        git(root, "config", "--add", key, value)
    (tmp_path / "store").write_text(f"https://x:{TOKEN}@github.com\n")
    return root


def test_the_copy_keeps_what_git_needs_and_drops_every_credential(tmp_path: Path) -> None:
    root = checked_out(tmp_path / "repo", tmp_path)
    (config,) = [f for f in git_config_files(root) if f.is_relative_to(root)]
    cleaned = GitConfig.of(config)
    copy = tmp_path / "copy"
    copy.write_text(cleaned.text)
    listed = git(tmp_path, "config", "--file", str(copy), "--list")
    for secret in (TOKEN, HEADER, URL_PASSWORD, REWRITE_PASSWORD, INCLUDED):
        assert secret not in cleaned.text and secret not in listed
    assert "credential" not in listed and "extraheader" not in listed and "include" not in listed
    assert "remote.Upstream.url=https://github.com/o/r.git" in listed  # the name's case kept
    assert 'user.name=Quote "and" \\ backslash' in listed
    assert "core.abbrev=12" in listed  # an included file's settings are kept, flattened
    assert {TOKEN, HEADER, URL_PASSWORD, REWRITE_PASSWORD, INCLUDED} <= set(cleaned.secrets)
    assert cleaned.stores == (tmp_path / "store",)


@pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")
async def test_a_sandboxed_command_sees_no_credential_and_git_still_describes(
    tmp_path: Path,
) -> None:
    root = checked_out(tmp_path / "repo", tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    sandbox = Sandbox.start("bwrap", root, root / ".cardrunner" / "runs" / "r1", home=home)
    script = (
        "cat .git/config; git config --list --show-origin; cat /etc/gitconfig; "
        f"cat {tmp_path / 'store'}; git describe --tags; git remote -v"
    )
    env = {"PATH": os.environ["PATH"]}
    result = await run_command(["sh", "-c", script], root, 60, env, groups=GROUPS, sandbox=sandbox)
    assert "v1.2.3" in result.output, result.output  # setuptools-scm's question still answered
    assert "https://github.com/o/r.git (fetch)" in result.output, result.output
    for secret in (TOKEN, HEADER, URL_PASSWORD, REWRITE_PASSWORD, INCLUDED):
        assert secret not in result.output, (secret, result.output)
    # and from now on cardrunner redacts the odd-shaped ones wherever they turn up
    assert redact(f"{URL_PASSWORD} {REWRITE_PASSWORD}") == "[redacted] [redacted]"
    # cardrunner's own git (outside the sandbox) still has them: pushes keep working
    assert HEADER in git(root, "config", "--get", "http.https://github.com/.extraheader")
