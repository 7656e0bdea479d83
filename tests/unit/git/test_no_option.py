"""No value becomes a git option, on a real repository: every `BranchRepo` call that takes a
remote, a branch, a commit or a revision from outside refuses one that starts with `-` (git would
read `--upload-pack=<command>` as an option and run the command) and runs nothing. And no commit
cardrunner writes carries a closing keyword."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from cardrunner.git.branches import BranchRepo, StartPoint
from cardrunner.git.repo import GitError
from tests.support.project import git


@pytest.fixture
def repo(tmp_path: Path) -> BranchRepo:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return BranchRepo(root)


Call = Callable[[BranchRepo, str], Awaitable[object]]
CALLS: dict[str, tuple[str, Call]] = {
    "push to a remote": ("remote", lambda r, v: r.push(v, "cards/x")),
    "push a branch": ("branch", lambda r, v: r.push("origin", v)),
    "ls-remote": ("remote", lambda r, v: r.remote_has_branch(v, "cards/x")),
    "fetch from a remote": ("remote", lambda r, v: r.fetch_branch(v, "cards/x")),
    "fetch a branch": ("branch", lambda r, v: r.fetch_branch(".", v)),
    "switch to a new branch": ("branch", lambda r, v: r.switch_new(v)),
    "switch at a commit": ("start commit", lambda r, v: r.switch_new("cards/x", v)),
    "switch back": ("branch", lambda r, v: r.switch_back(StartPoint("0" * 40, v))),
    "delete a branch": ("branch", lambda r, v: r.delete_branch(v)),
    "count own commits": ("branch", lambda r, v: r.own_commits(v)),
    "commits since": ("commit", lambda r, v: r.commits_since(v)),
    "a commit's message": ("commit", lambda r, v: r.message(v)),
    "cherry-pick": ("commit", lambda r, v: r.cherry_pick_clean(v)),
    "a file at a revision": ("revision", lambda r, v: r.show_file(v, "a.txt")),
    "a worktree's branch": ("branch", lambda r, v: r.add_worktree(r.root.parent / "wt", v)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
async def test_a_value_that_is_an_option_is_refused_and_runs_nothing(
    repo: BranchRepo, tmp_path: Path, call: str
) -> None:
    marker = tmp_path / "marker"
    what, run = CALLS[call]
    hostile = f"--upload-pack=touch {marker}"
    with pytest.raises(GitError) as refused:
        await run(repo, hostile)
    assert f"refused the {what} '--upload-pack=touch" in str(refused.value)
    assert "which git reads as an option" in str(refused.value)
    assert not marker.exists()
    assert git(repo.root, "symbolic-ref", "--short", "HEAD").strip() == "main"


async def test_a_remote_path_is_passed_after_double_dash(repo: BranchRepo, tmp_path: Path) -> None:
    """The ordinary values still work: a path as the remote, with `--` before it."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    assert not await repo.remote_has_branch(str(origin), "cards/x")
    await repo.push(str(origin), "cards/x")
    assert await repo.remote_has_branch(str(origin), "cards/x")
    head = git(repo.root, "rev-parse", "HEAD").strip()
    assert await repo.fetch_branch(str(origin), "cards/x") == head


async def test_no_commit_cardrunner_writes_closes_an_issue(repo: BranchRepo) -> None:
    (repo.root / "a.txt").write_text("b\n")
    base = git(repo.root, "rev-parse", "HEAD").strip()
    await repo.commit(["a.txt"], "card: Fixes #12\n\nResolves: https://github.com/o/r/issues/3")
    message = git(repo.root, "log", "-1", "--format=%B")
    assert message.startswith("card: Fixes issue 12\n\nResolves: o/r issue 3")
    (repo.root / "a.txt").write_text("c\n")
    await repo.fold_into_one(base, "card: closes o/r#4", ["a.txt"])
    assert git(repo.root, "log", "-1", "--format=%s").strip() == "card: closes o/r issue 4"
