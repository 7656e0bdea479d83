"""Hunks and reviewer comments of real `git diff` output; a review that keeps some hunks of a
file and drops others commits exactly the kept ones (real repositories, real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.agent.events import Event
from cardrunner.agent.review import HunkRef, ReviewDecision, ScriptedApprover
from cardrunner.agent.toolpool import ToolContext
from cardrunner.git.hunks import comments_reason, parse_diff, patch_of
from cardrunner.git.repo import GitRepo
from cardrunner.tools.commit import CommitTool
from cardrunner.verify.calls import OutsideWatch
from tests.support.commitparts import bare_parts
from tests.support.project import git, init_repo

OLD = "".join(f"line {n}\n" for n in range(1, 31))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text(OLD)
    init_repo(root)
    return root


def change_two_places(root: Path) -> None:
    """One edit near the top and one near the bottom: two hunks in one file, plus a new file."""
    text = OLD.replace("line 2\n", "line two\n").replace("line 28\n", "line twenty-eight\n")
    (root / "src" / "a.py").write_text(text)
    (root / "src" / "new.py").write_text("print('new')\n")


async def diff_of(root: Path) -> tuple[GitRepo, str, str]:
    repo = GitRepo(root)
    base = await repo.snapshot(["src"])
    change_two_places(root)
    diff = (await repo.diff_trees(base, await repo.snapshot(["src"]), ["src"]))[0].decode()
    return repo, base, diff


async def test_parse_finds_files_hunks_lines_and_comments(repo: Path) -> None:
    _, _, diff = await diff_of(repo)
    lines = diff.splitlines()
    at = lines.index("+line two")
    commented = "\n".join([*lines[: at + 1], "# say 'second' instead", *lines[at + 1 :]])
    parsed = parse_diff("!! a review header line\n\n" + commented)

    assert [f.path for f in parsed.files] == ["src/a.py", "src/new.py"]
    first, second = parsed.file("src/a.py").hunks  # type: ignore[union-attr]
    assert (first.index, second.index) == (0, 1)
    assert (first.new_start, first.added, first.removed) == (1, 1, 1)
    assert second.new_start > first.new_start
    assert parsed.hunk_at(first.first_line + 2) is first
    assert parsed.hunk_at(second.last_line) is second
    assert parsed.hunk_at(0) is None
    [comment] = parsed.comments
    assert (comment.path, comment.line, comment.code) == ("src/a.py", 2, "+line two")
    assert comments_reason(parsed.comments) == "src/a.py:2 (`+line two`): say 'second' instead"
    assert all(not line.startswith("#") for h in parsed.hunks() for line in h.lines)


async def test_patch_of_one_hunk_undoes_only_that_hunk_in_the_tree(repo: Path) -> None:
    repo_port, base, diff = await diff_of(repo)
    parsed = parse_diff(diff)
    now = await repo_port.snapshot(["src"])
    patch = patch_of(parsed, {HunkRef("src/a.py", 1)}).encode()
    tree = await repo_port.tree_without(now, base, [], patch)
    text = git(repo, "show", f"{tree}:src/a.py")
    assert "line two\n" in text and "line 28\n" in text and "twenty-eight" not in text
    assert "twenty-eight" in (repo / "src" / "a.py").read_text(), "nothing on disk changed"


async def test_accept_with_a_dropped_hunk_commits_the_rest(repo: Path) -> None:
    repo_port = GitRepo(repo)
    base = await repo_port.snapshot(["src"])
    change_two_places(repo)
    drop = [HunkRef("src/a.py", 0), HunkRef("src/new.py", 0)]
    approver = ScriptedApprover([ReviewDecision("accept", "not wanted", drop_hunks=drop)])
    tool = CommitTool(
        repo_port, approver, ["src"], base, "run-1", "Card", repo / "cards" / "c.md", "c",
        lambda: {"Card": "c"}, *bare_parts(repo), hooks=None,
        outside=OutsideWatch(repo_port, ["src"], ()),
    )  # fmt: skip
    events: list[Event] = []
    result = await tool.tool().fn(
        {"message": "card: Card\n\nTwo edits."}, ToolContext(1, events.append)
    )

    assert "src/a.py hunk 1" in result.text and "not wanted" in result.text
    assert "src/new.py" in result.text  # the new file lost its only hunk: dropped whole
    committed = git(repo, "show", "HEAD:src/a.py")
    assert "line 2\n" in committed and "line twenty-eight\n" in committed
    assert (repo / "src" / "a.py").read_text() == committed
    assert not (repo / "src" / "new.py").exists()
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["src/a.py"]
