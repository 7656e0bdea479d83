"""The review shows everything the commit and the restore touch; secrets are never committed.

Real git repositories, the real `git_commit` tool and the real work area; only the approver is
scripted (it records what the user would have seen).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.agent.events import Event, Notice, RunFinished, Usage
from cardrunner.agent.review import ReviewDecision, ScriptedApprover
from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.run.workarea import WorkArea
from cardrunner.tools.commit import CommitTool
from cardrunner.verify.calls import OutsideWatch
from cardrunner.verify.scope import review_header, secrets_in_diff
from tests.support.commitparts import bare_parts
from tests.support.project import git, init_repo


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("print('hi')\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    init_repo(repo)
    return repo


async def tool_for(
    root: Path, paths: list[str], decisions: list[ReviewDecision]
) -> tuple[WorkArea, CommitTool, ScriptedApprover]:
    area = await WorkArea.open(root, paths, "card", isolation=False)
    approver = ScriptedApprover(decisions)
    calls, checks, evidence = bare_parts(root)
    commit = CommitTool(
        git=area.git,
        approver=approver,
        write_paths=paths,
        base_tree=area.base_tree,
        run_id="r1",
        card_title="A card",
        card_path=root / "cards" / "card.md",
        card_slug="card",
        trailers=dict,
        calls=calls,
        checks=checks,
        evidence=evidence,
        hooks=None,
        outside=OutsideWatch(area.git, paths, ()),
        ignored_at_start=area.ignored_at_start,
    )
    return area, commit, approver


async def call(commit: CommitTool, events: list[Event] | None = None) -> tuple[bool, str]:
    ctx = ToolContext(round=1, emit=(events if events is not None else []).append)
    result = await ToolPool([commit.tool()]).execute("git_commit", {"message": "card: x"}, ctx)
    return result.is_error, result.text


async def test_files_hidden_by_a_gitignore_the_run_wrote_are_listed_and_removed_on_reject(
    root: Path,
) -> None:
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "old.pyc").write_bytes(b"old")  # ignored before the run
    area, commit, approver = await tool_for(root, ["."], [ReviewDecision("reject", "no")])
    (root / ".gitignore").write_text("__pycache__/\nsrc/payload.py\nsrc/deep/\n")
    (root / "src" / "payload.py").write_text("import os; os.system('curl evil')\n")
    (root / "src" / "deep").mkdir()
    (root / "src" / "deep" / "more.py").write_text("x = 1\n")
    (root / "src" / "__pycache__" / "new.pyc").write_bytes(b"new")
    is_error, text = await call(commit)
    assert not is_error and "REJECTED" in text
    request = approver.requests[0]
    assert request.files == [".gitignore"]  # all the plain diff would show
    assert request.hidden == ["src/__pycache__/new.pyc", "src/deep/more.py", "src/payload.py"]
    assert request.flagged == [".gitignore"]
    top = request.diff.split("diff --git")[0]
    assert top.startswith("!! CONFIGURATION CHANGED")
    assert "!!   src/payload.py" in top and "!!   src/deep/more.py" in top
    assert "and 1 file(s) in caches" in top
    finished = RunFinished(
        status="failed", reason="rejected", rounds=1, tool_calls=1, usage=Usage(), cost_usd=0.0
    )
    await area.finish(finished)
    assert not (root / "src" / "payload.py").exists() and not (root / "src" / "deep").exists()
    assert not (root / "src" / "__pycache__" / "new.pyc").exists()
    assert (root / "src" / "__pycache__" / "old.pyc").read_bytes() == b"old"  # the user's
    assert (root / ".gitignore").read_text() == "__pycache__/\n"
    assert git(root, "status", "--porcelain", "--ignored") == "!! src/__pycache__/\n"


async def test_config_that_widens_a_run_is_flagged_at_the_top(root: Path) -> None:
    _, commit, approver = await tool_for(root, ["."], [ReviewDecision("no_commit")])
    (root / ".mcp.json").write_text('{"mcpServers": {"x": {"command": "sh"}}}\n')
    (root / "cardrunner.toml").write_text('[paths]\nwrite = ["/"]\n')
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (root / ".gitattributes").write_text("* filter=evil\n")
    (root / "src" / "app.py").write_text("print('changed')\n")
    await call(commit)
    request = approver.requests[0]
    assert request.flagged == [
        ".gitattributes", ".github/workflows/ci.yml", ".mcp.json", "cardrunner.toml"
    ]  # fmt: skip
    header = request.diff.split("diff --git")[0].splitlines()
    assert header[0].startswith("!! CONFIGURATION CHANGED")
    assert header[1:5] == [f"!!   {p}" for p in request.flagged]
    assert "src/app.py" not in "\n".join(header)  # code is in the diff, not flagged


async def test_a_plain_change_has_no_header(root: Path) -> None:
    _, commit, approver = await tool_for(root, ["src"], [ReviewDecision("accept")])
    (root / "src" / "app.py").write_text("print('changed')\n")
    assert not (await call(commit))[0]
    assert approver.requests[0].diff.startswith("diff --git")
    assert approver.requests[0].hidden == [] and approver.requests[0].flagged == []


async def test_a_change_that_would_commit_a_secret_is_refused_naming_file_and_line(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYMENTS_API_TOKEN", "tok-9f8e7d6c5b4a")
    _, commit, approver = await tool_for(root, ["src"], [ReviewDecision("accept")])
    (root / "src" / "app.py").write_text("print('hi')\nTOKEN = 'tok-9f8e7d6c5b4a'\n")
    (root / "src" / "keys.py").write_text("# config\n\nGH = 'ghp_" + "a" * 36 + "'\n")
    events: list[Event] = []
    is_error, text = await call(commit, events)
    assert is_error and approver.requests == []  # never even shown for accepting
    assert "src/app.py:2: the value of a secret environment variable" in text
    assert "src/keys.py:3: a string shaped like an API key" in text
    assert "tok-9f8e7d6c5b4a" not in text
    assert any(isinstance(e, Notice) and "src/app.py:2" in e.message for e in events)
    assert git(root, "log", "--oneline").count("\n") == 1  # nothing committed


def test_header_and_scan_helpers() -> None:
    assert review_header(["src/a.py"], []) == ""
    diff = "+++ b/x.py\n@@ -1,2 +1,3 @@\n a\n+b = 'sk-ant-abc'\n c\n"
    assert [str(h) for h in secrets_in_diff(diff)] == [
        "x.py:2: a string shaped like an API key or private key"
    ]
