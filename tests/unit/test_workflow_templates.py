"""The CI workflow templates, in the "safe outputs" shape, checked as a maintainer installs them.

actionlint (with shellcheck on every `run:`) and zizmor's security audits pass with no
finding; and what those tools do not know about cardrunner is asserted here: the job that
runs the model holds the model key and nothing that can write or reach GitHub, every checkout
drops its credentials, every action is pinned by commit, and only the push job, which never
runs the model, can write.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [ROOT / "docs/workflows/cardrunner-issues.yml", ROOT / ".github/workflows/cards.yml"]
PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")
TOKENS = ("github.token", "secrets.GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")


def tool(name: str) -> str:
    """The dev extra's binary; skipped outside CI when it is not installed."""
    found = Path(sys.executable).parent / name
    if found.exists():
        return str(found)
    if (which := shutil.which(name)) is not None:
        return which
    if os.environ.get("CI"):
        pytest.fail(f"{name} is not installed (pip install -e '.[dev]')")
    pytest.skip(f"{name} is not installed")


def jobs(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    found = data["jobs"]
    assert isinstance(found, dict)
    return found


def runs_model(job: dict[str, Any]) -> bool:
    return "ANTHROPIC_API_KEY" in yaml.safe_dump(job)


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_actionlint_and_zizmor_find_nothing(path: Path) -> None:
    shellcheck = tool("shellcheck")
    lint = subprocess.run(
        [tool("actionlint"), "-shellcheck", shellcheck, str(path)], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", str(path)], capture_output=True, text=True
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_zizmor_would_catch_the_old_shape(tmp_path: Path) -> None:
    """The audit can fail: a tag-pinned checkout that keeps its credentials, as the templates
    had it, is two findings (a workflow-wide write permission is asserted below: zizmor does
    not flag it while every job sets its own)."""
    old = TEMPLATES[0].read_text()
    old = re.sub(r"actions/checkout@[0-9a-f]{40} # v7\.0\.1", "actions/checkout@v5", old)
    old = old.replace("persist-credentials: false", "fetch-tags: false")
    copy = tmp_path / "old.yml"
    copy.write_text(old)
    audit = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", str(copy)], capture_output=True, text=True
    )
    assert audit.returncode != 0
    for finding in ("unpinned-uses", "artipacked"):
        assert finding in audit.stdout + audit.stderr


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_only_a_job_that_never_runs_the_model_can_write(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    assert data["permissions"] == {}  # nothing for the whole workflow: each job asks
    model_jobs = 0
    for name, job in jobs(path).items():
        permissions = job.get("permissions")
        assert isinstance(permissions, dict), f"{name} has no permissions of its own"
        writes = {scope for scope, level in permissions.items() if level == "write"}
        if runs_model(job):
            model_jobs += 1
            assert permissions == {"contents": "read"}, name
            text = yaml.safe_dump(job)
            assert not [t for t in TOKENS if t in text], f"{name} runs the model with a token"
        elif writes:
            assert writes <= {"contents", "pull-requests"}, name
            assert "cardrunner publish" in yaml.safe_dump(job), f"{name} writes unchecked"
    assert model_jobs >= 1


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_every_action_is_pinned_and_every_checkout_drops_its_token(path: Path) -> None:
    text = path.read_text()
    for name, job in jobs(path).items():
        for step in job["steps"]:
            uses = step.get("uses")
            if uses is None:
                continue
            assert PINNED.fullmatch(uses), f"{name}: {uses} is not pinned by commit"
            assert re.search(re.escape(uses) + r" # v\d", text), f"{uses} names no version"
            if uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_no_title_or_stranger_text_becomes_an_output_line(path: Path) -> None:
    """A value written to $GITHUB_OUTPUT is a literal, a checked sha or branch, a count, or
    one line of JSON: a title's newline must never start a line of its own."""
    allowed = re.compile(
        r'echo "(sha=\$sha|branch=\$branch|base=\$base|plan=\$\(jq -c \. plan\.json\)|'
        r"count=\$\(jq '\.include \| length' plan\.json\))\""
    )
    lines = [line.strip() for line in path.read_text().splitlines()]
    for index, line in enumerate(lines):
        if "GITHUB_OUTPUT" not in line:
            continue
        if line.startswith("} >>"):
            block = lines[lines.index("{", max(0, index - 4)) + 1 : index]
        else:
            block = [
                line.split(">>")[0].strip().removeprefix('[[ "$base" =~ ^[0-9a-f]{40}$ ]] && ')
            ]
        for entry in block:
            assert allowed.fullmatch(entry), f"{path.name}: {entry!r} goes to $GITHUB_OUTPUT"
    issues = path.read_text()
    if "sha=$sha" in issues:  # each of these is checked before it is written
        assert '[[ "$branch" =~ ^cards/[a-z0-9-]+-[0-9a-f]{8}$ ]]' in issues
        assert '[[ "$sha" =~ ^[0-9a-f]{40}$ ]]' in issues
