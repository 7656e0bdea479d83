"""Git never runs the repository's commands: every `GitRepo` operation in an armed repository."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError, GitRepo
from cardrunner.git.safety import command_args, overrides, safe_argv, tracked
from tests.support.hostile_git import arm, fire_plain_git, markers
from tests.support.project import git, make_project


def _listing(*entries: tuple[str, str, str]) -> bytes:
    return b"".join(f"{scope}\0{key}\n{value}\0".encode() for scope, key, value in entries)


def test_the_repositorys_commands_are_undone_and_the_users_put_back() -> None:
    listing = _listing(
        ("global", "credential.helper", "store"),
        ("global", "core.sshcommand", "ssh -i ~/.ssh/work"),
        ("global", "filter.lfs.clean", "git-lfs clean -- %f"),
        ("local", "credential.helper", "!evil"),
        ("local", "core.sshcommand", "evil"),
        ("local", "filter.x.clean", "evil"),
        ("local", "filter.x.required", "true"),
        ("worktree", "gpg.program", "evil"),
        ("local", "user.name", "Someone"),
    )
    args = overrides(listing)
    pairs = [args[i + 1] for i in range(0, len(args), 2)]
    assert all(args[i] == "-c" for i in range(0, len(args), 2))
    assert pairs == [
        "core.sshcommand=ssh -i ~/.ssh/work",
        "credential.helper=",
        "credential.helper=store",
        "filter.x.clean=",
        "filter.x.required=false",
        "gpg.program=gpg",
    ]  # the user's LFS filter and the repository's user.name are left as they are


def test_patch_commands_get_no_external_diff_and_no_textconv() -> None:
    assert command_args(["-c", "a=b", "log", "-p"]) == [
        "-c", "a=b", "log", "--no-ext-diff", "--no-textconv", "-p",
    ]  # fmt: skip
    assert command_args(["diff", "--name-only"])[:3] == ["diff", "--no-ext-diff", "--no-textconv"]
    assert command_args(["-c", "diff.x=y", "commit-tree", "t"]) == [
        "-c",
        "diff.x=y",
        "commit-tree",
        "t",
    ]


def _armed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    root = tmp_path / name / "repo"
    root.mkdir(parents=True)
    make_project(root)
    return root, arm(root, tmp_path / name)


def test_the_payloads_fire_under_plain_git(tmp_path: Path) -> None:
    root, folder = _armed(tmp_path, "control")
    fired = fire_plain_git(root, folder)
    for name in (
        "fsmonitor",
        "clean",
        "smudge",
        "process",
        "hook-pre-commit",
        "hook-post-checkout",
    ):
        assert name in fired


async def _every_operation(root: Path, tmp_path: Path) -> None:
    repo = BranchRepo(root)
    assert await repo.is_repo()
    base = await repo.snapshot(["src", "cards"])
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "src" / "new.py").write_text("x = 1\n")
    assert await repo.dirty_files(["src"]) == ["src/calc.py", "src/new.py"]
    await repo.ignored_files(["src"])
    raw, files = await repo.diff_trees(base, await repo.snapshot(["src"]), ["src"])
    diff = raw.decode()
    assert files == ["src/calc.py", "src/new.py"] and "+    return a + b" in diff
    assert await repo.show_file(base, "src/calc.py") == b"def add(a, b):\n    return a - b\n"
    worktree = tmp_path / "wt"
    await repo.add_worktree(worktree, "cards/x")
    sha = await repo.commit(["src"], "fix add")
    await repo.commit_content("cards/fix-add.md", b"---\ntitle: t\n---\n", "card")
    await repo.card_history()
    assert worktree in await repo.worktrees()
    side = GitRepo(worktree)
    (worktree / "src" / "calc.py").write_text("conflict = 1\n")
    await side.commit(["src"], "conflicting")
    conflicting = (await side._git("rev-parse", "HEAD")).text
    assert not await repo.cherry_pick_clean(conflicting)  # the merge driver would run here
    await repo.remove_worktree(worktree, force=True)
    await repo.restore(base, ["src"])
    start = await repo.start_point()
    await repo.switch_new("cards/y")
    assert not await repo.remote_has_branch("origin", "cards/y")
    await repo.push("origin", "cards/y")  # uploadpack/receivepack would run here
    await repo.switch_back(start)
    assert (await repo.message(sha)).startswith("fix add")


def test_no_operation_runs_a_command_of_the_repository(tmp_path: Path) -> None:
    root, folder = _armed(tmp_path, "armed")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    script = folder.parent / "payload.sh"
    git(root, "remote", "add", "origin", str(remote))
    git(root, "config", "remote.origin.uploadpack", f"{script} uploadpack; git-upload-pack")
    git(root, "config", "remote.origin.receivepack", f"{script} receivepack; git-receive-pack")
    asyncio.run(_every_operation(root, tmp_path))
    assert markers(folder) == []


def test_a_folder_shaped_like_a_bare_repository_is_never_entered(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    make_project(root)
    trap = root / "trap"
    subprocess.run(["git", "init", "-q", "--bare", str(trap)], check=True)
    script = arm(root, tmp_path).parent / "payload.sh"
    git(trap, "config", "core.bare", "false")
    git(trap, "config", "core.worktree", ".")
    git(trap, "config", "core.fsmonitor", f"{script} bare-fsmonitor")
    for folder in ("objects", "refs"):
        (trap / folder / ".keep").write_text("")
    with pytest.raises(GitError):
        asyncio.run(GitRepo(trap).dirty_files(["."]))
    subprocess.run(safe_argv(trap, "status"), capture_output=True, check=False)
    assert markers(tmp_path / "markers") == []
    subprocess.run(["git", "-C", str(trap), "status"], capture_output=True, check=False)
    assert markers(tmp_path / "markers") == ["bare-fsmonitor"]  # the control: plain git runs it


def test_tracked_names_only_what_git_tracks_under_the_folder(tmp_path: Path) -> None:
    make_project(tmp_path)
    state = tmp_path / ".cardrunner" / "runs"
    state.mkdir(parents=True)
    (state / "committed.jsonl").write_text("{}\n")
    (state / "ours.jsonl").write_text("{}\n")
    git(tmp_path, "add", "-f", ".cardrunner/runs/committed.jsonl")
    git(tmp_path, "commit", "-qm", "a log")
    assert tracked(tmp_path, ".cardrunner") == {(state / "committed.jsonl").resolve()}
    assert tracked(tmp_path / "nowhere", ".cardrunner") == frozenset()
