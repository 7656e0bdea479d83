"""The git port on real repositories: snapshots, diffs, commits and restores stay inside paths."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cardrunner.git.branches import BranchRepo
from cardrunner.git.repo import GitError, GitRepo

BINARY = bytes(range(256)) * 4


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


async def diff(g: GitRepo, base: str, paths: list[str]) -> tuple[str, list[str]]:
    """The diff from the snapshot `base` to the working tree now, and its files."""
    if not paths:
        return "", []
    raw, names = await g.diff_trees(base, await g.snapshot(paths), paths)
    return raw.decode("utf-8", errors="replace"), names


def write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Tester")
    git(root, "config", "user.email", "tester@example.com")
    write(root / ".gitignore", "*.log\n")
    write(root / "src" / "a.py", "one\ntwo\nthree\n")
    write(root / "src" / "old.txt", "old\n")
    write(root / "src" / "data.bin", BINARY)
    write(root / "docs" / "outside.md", "docs\n")
    write(root / "README", "readme\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def index_bytes(root: Path) -> bytes:
    return (root / ".git" / "index").read_bytes()


def make_run_changes(root: Path) -> None:
    write(root / "src" / "a.py", "one\nTWO\nthree\n")
    (root / "src" / "old.txt").unlink()
    write(root / "src" / "new.py", "print('new')\n")
    write(root / "src" / "pkg" / "deep" / "mod.py", "x = 1\n")
    write(root / "src" / "data.bin", BINARY[::-1])
    write(root / "src" / "build.log", "ignored\n")
    write(root / "docs" / "outside.md", "user edit outside paths\n")


async def test_basic_queries(repo: Path, tmp_path: Path) -> None:
    g = GitRepo(repo)
    assert await g.is_repo()
    assert await g.head() == git(repo, "rev-parse", "HEAD")
    assert await g.branch() == "main"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not await GitRepo(plain).is_repo()
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "trunk")
    assert await GitRepo(empty).head() is None
    assert await GitRepo(empty).branch() == "trunk"


async def test_dirty_files(repo: Path) -> None:
    write(repo / "src" / "a.py", "changed\n")
    write(repo / "src" / "staged.py", "s\n")
    git(repo, "add", "src/staged.py")
    write(repo / "src" / "sub" / "untracked.py", "u\n")
    write(repo / "src" / "x.log", "ignored\n")
    write(repo / "README", "outside\n")
    assert await GitRepo(repo).dirty_files(["src"]) == [
        "src/a.py",
        "src/staged.py",
        "src/sub/untracked.py",
    ]


async def test_snapshot_diff_restore_round_trip(repo: Path) -> None:
    g = GitRepo(repo)
    write(repo / "src" / "untracked_before.txt", "from before the run\n")
    (repo / "src" / "a.py").chmod(0o644)
    index_before = index_bytes(repo)
    base = await g.snapshot(["src"])
    make_run_changes(repo)
    write(repo / "src" / "untracked_before.txt", "changed by the run\n")
    (repo / "src" / "a.py").chmod(0o755)

    text, files = await diff(g, base, ["src"])
    assert files == [
        "src/a.py",
        "src/data.bin",
        "src/new.py",
        "src/old.txt",
        "src/pkg/deep/mod.py",
        "src/untracked_before.txt",
    ]
    assert "-two\n+TWO" in text and "+print('new')" in text and "-old" in text
    assert "Binary files a/src/data.bin and b/src/data.bin differ" in text
    assert "outside.md" not in text and "build.log" not in text
    assert index_bytes(repo) == index_before  # the user's staging area is never touched

    await g.restore(base, ["src"])
    assert (repo / "src" / "a.py").read_text() == "one\ntwo\nthree\n"
    assert (repo / "src" / "a.py").stat().st_mode & 0o777 == 0o644
    assert (repo / "src" / "old.txt").read_text() == "old\n"
    assert (repo / "src" / "data.bin").read_bytes() == BINARY
    assert (repo / "src" / "untracked_before.txt").read_text() == "from before the run\n"
    assert not (repo / "src" / "new.py").exists()
    assert not (repo / "src" / "pkg").exists()  # folders the run created, now empty
    assert (repo / "src" / "build.log").read_text() == "ignored\n"  # ignored: not ours
    assert (repo / "docs" / "outside.md").read_text() == "user edit outside paths\n"
    assert index_bytes(repo) == index_before
    assert await diff(g, base, ["src"]) == ("", [])


async def test_restore_swaps_files_and_folders(repo: Path) -> None:
    g = GitRepo(repo)
    base = await g.snapshot(["src"])
    (repo / "src" / "old.txt").unlink()
    write(repo / "src" / "old.txt" / "inner.txt", "now a folder\n")
    await g.restore(base, ["src"])
    assert (repo / "src" / "old.txt").read_text() == "old\n"


async def test_commit_stages_only_the_paths(repo: Path) -> None:
    g = GitRepo(repo)
    write(repo / "docs" / "outside.md", "staged by the user\n")
    git(repo, "add", "docs/outside.md")
    write(repo / "README", "unstaged user edit\n")
    before = await g.head()
    make_run_changes(repo)
    write(repo / "docs" / "outside.md", "staged by the user\n")

    sha = await g.commit(["src"], "card: make two loud\n\nVerified live.")
    assert await g.head() == sha and git(repo, "rev-parse", "main") == sha
    assert git(repo, "rev-parse", f"{sha}^") == before
    assert git(repo, "log", "-1", "--format=%B", sha) == "card: make two loud\n\nVerified live."
    changed = git(repo, "show", "--name-status", "--format=", sha).splitlines()
    assert sorted(changed) == [
        "A\tsrc/new.py",
        "A\tsrc/pkg/deep/mod.py",
        "D\tsrc/old.txt",
        "M\tsrc/a.py",
        "M\tsrc/data.bin",
    ]
    assert git(repo, "diff", "--cached", "--name-only") == "docs/outside.md"
    assert git(repo, "status", "--porcelain", "--", "src") == ""
    assert "README" in git(repo, "status", "--porcelain")
    assert "commit: card: make two loud" in git(repo, "reflog", "-1")
    with pytest.raises(GitError, match="nothing to commit"):
        await g.commit(["src"], "again")


async def test_commit_in_an_empty_repository(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    write(root / "src" / "a.py", "a\n")
    write(root / "notes.txt", "not in paths\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Tester")
    git(root, "config", "user.email", "tester@example.com")
    g = GitRepo(root)
    with pytest.raises(GitError, match="nothing to commit"):
        await g.commit(["nothing_here"], "empty")
    sha = await g.commit(["src"], "first")
    assert await g.head() == sha
    assert git(root, "ls-tree", "-r", "--name-only", sha) == "src/a.py"
    assert git(root, "status", "--porcelain") == "?? notes.txt"


async def test_commit_identity_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-config"))
    for var in ("NAME", "EMAIL"):
        for who in ("AUTHOR", "COMMITTER"):
            monkeypatch.delenv(f"GIT_{who}_{var}", raising=False)
    root = tmp_path / "anon"
    write(root / "src" / "a.py", "a\n")
    git(root, "init", "-q", "-b", "main")
    g = GitRepo(root)
    sha = await g.commit(["src"], "by the runner")
    assert git(root, "log", "-1", "--format=%an <%ae>|%cn", sha) == (
        "cardrunner <cardrunner@localhost>|cardrunner"
    )
    git(root, "config", "user.name", "Real Person")
    write(root / "src" / "a.py", "b\n")
    sha = await g.commit(["src"], "second")
    assert git(root, "log", "-1", "--format=%an <%ae>", sha) == "Real Person <cardrunner@localhost>"


async def test_workspace_in_a_subfolder(repo: Path) -> None:
    ws = repo / "ws"
    write(ws / "src" / "m.py", "m\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "ws")
    g = GitRepo(ws)
    base = await g.snapshot(["src"])
    write(ws / "src" / "m.py", "changed\n")
    write(ws / "src" / "n.py", "new\n")
    write(repo / "src" / "a.py", "same name, other folder\n")
    assert await g.dirty_files(["src"]) == ["src/m.py", "src/n.py"]
    text, files = await diff(g, base, ["src"])
    assert files == ["src/m.py", "src/n.py"] and "a/src/m.py" in text
    await g.restore(base, ["src"])
    assert (ws / "src" / "m.py").read_text() == "m\n" and not (ws / "src" / "n.py").exists()
    assert (repo / "src" / "a.py").read_text() == "same name, other folder\n"


async def test_worktree_and_cherry_pick(repo: Path, tmp_path: Path) -> None:
    main = BranchRepo(repo)
    wt_path = tmp_path / "wt"
    await main.add_worktree(wt_path, "cardrunner/run-1")
    wt = GitRepo(wt_path)
    assert await wt.branch() == "cardrunner/run-1"
    write(wt_path / "src" / "a.py", "one\ntwo\nthree\nfour\n")
    clean_sha = await wt.commit(["src"], "card: add four")

    write(repo / "README", "user's unrelated edit\n")
    head_before = await main.head()
    assert await main.cherry_pick_clean(clean_sha)
    assert git(repo, "rev-parse", "HEAD^") == head_before
    assert (repo / "src" / "a.py").read_text() == "one\ntwo\nthree\nfour\n"
    assert (repo / "README").read_text() == "user's unrelated edit\n"

    write(wt_path / "src" / "a.py", "one\nWT\nthree\nfour\n")
    clash_sha = await wt.commit(["src"], "card: change two")
    write(repo / "src" / "a.py", "one\nMAIN\nthree\nfour\n")
    git(repo, "commit", "-q", "-m", "main changes the same line", "--", "src/a.py")
    head_before = await main.head()
    assert not await main.cherry_pick_clean(clash_sha)
    assert await main.head() == head_before
    assert (repo / "src" / "a.py").read_text() == "one\nMAIN\nthree\nfour\n"
    assert (repo / "README").read_text() == "user's unrelated edit\n"
    assert not (repo / ".git" / "CHERRY_PICK_HEAD").exists()
    assert git(repo, "status", "--porcelain") == "M README"  # unstaged, as before

    write(repo / "src" / "a.py", "local edit in the way\n")
    write(wt_path / "src" / "a.py", "one\nWT\nthree\nfour\nfive\n")
    third = await wt.commit(["src"], "card: five")
    assert not await main.cherry_pick_clean(third)
    assert (repo / "src" / "a.py").read_text() == "local edit in the way\n"

    write(wt_path / "src" / "dirt.txt", "uncommitted\n")
    with pytest.raises(GitError):
        await main.remove_worktree(wt_path)
    await main.remove_worktree(wt_path, force=True)
    assert not wt_path.exists()
    await main.add_worktree(wt_path, "cardrunner/run-1")  # the branch exists now: reused
    assert (wt_path / "src" / "a.py").read_text() == "one\nWT\nthree\nfour\nfive\n"
    await main.remove_worktree(wt_path)


async def test_cardrunner_folder_is_never_part_of_a_change(repo: Path) -> None:
    g = GitRepo(repo)
    base = await g.snapshot(["."])
    write(repo / ".cardrunner" / "runs" / "r1.jsonl", "{}\n")
    write(repo / "src" / "a.py", "changed\n")
    assert await g.dirty_files(["."]) == ["src/a.py"]
    assert (await diff(g, base, ["."]))[1] == ["src/a.py"]
    sha = await g.commit(["."], "whole workspace")
    assert git(repo, "show", "--name-only", "--format=", sha) == "src/a.py"
    await g.restore(base, ["."])
    assert (repo / ".cardrunner" / "runs" / "r1.jsonl").exists()
    assert await g.dirty_files([]) == [] and await diff(g, base, []) == ("", [])


async def test_missing_git_is_a_git_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    g = GitRepo(repo)
    assert not await g.is_repo()
    with pytest.raises(GitError, match="git is not installed"):
        await g.head()


async def test_ignored_cardrunner_folder_does_not_break_add(repo: Path) -> None:
    write(repo / ".gitignore", "*.log\n.cardrunner/\n")
    git(repo, "commit", "-q", "-am", "ignore .cardrunner")
    ws = repo / "ws"
    write(ws / "src" / "m.py", "m\n")
    for root in (repo, ws):
        write(root / ".cardrunner" / "runs" / "r.jsonl", "{}\n")
        g = GitRepo(root)
        base = await g.snapshot(["."])
        write(root / "src" / "new.py", "n\n")
        assert "src/new.py" in (await diff(g, base, ["."]))[1]
        await g.restore(base, ["."])
        assert not (root / "src" / "new.py").exists()
        assert (root / ".cardrunner" / "runs" / "r.jsonl").exists()


async def test_an_ignored_write_folder_is_left_out(repo: Path) -> None:
    write(repo / ".gitignore", "*.log\nbuild/\n")
    git(repo, "commit", "-q", "-am", "ignore build")
    write(repo / "build" / "out.o", "object\n")
    g = GitRepo(repo)
    base = await g.snapshot(["src", "build"])
    write(repo / "src" / "a.py", "changed\n")
    write(repo / "build" / "out.o", "rebuilt\n")
    assert (await diff(g, base, ["src", "build"]))[1] == ["src/a.py"]
    sha = await g.commit(["src", "build"], "only the source")
    assert git(repo, "show", "--name-only", "--format=", sha) == "src/a.py"


async def test_show_file_reads_a_file_at_a_revision_byte_for_byte(repo: Path) -> None:
    main = GitRepo(repo)
    snapshot = await main.snapshot(["src"])
    make_run_changes(repo)
    assert await main.show_file(snapshot, "src/data.bin") == BINARY
    assert await main.show_file("HEAD", "src/a.py") == b"one\ntwo\nthree\n"
    assert await main.show_file(snapshot, "src/new.py") is None  # not there at the snapshot
    inner = GitRepo(repo / "src")  # a workspace in a subfolder: paths are the workspace's
    assert await inner.show_file(snapshot, "old.txt") == b"old\n"


async def test_build_output_git_does_not_ignore_is_never_a_change(repo: Path) -> None:
    """A project without `__pycache__/` in `.gitignore`: compileall's `.pyc` files change no
    snapshot, no diff and no commit, and the review can still name them."""
    from cardrunner.config.settings import BUILD_OUTPUT

    g = GitRepo(repo, BUILD_OUTPUT)
    before = await g.snapshot(["src"])
    write(repo / "src" / "__pycache__" / "a.cpython-311.pyc", b"\x00compiled")
    write(repo / "src" / "pkg.egg-info" / "PKG-INFO", "Name: pkg\n")
    assert await g.snapshot(["src"]) == before
    assert await g.dirty_files(["src"]) == []
    assert await g.build_output_files(["src"]) == [
        "src/__pycache__/a.cpython-311.pyc",
        "src/pkg.egg-info/PKG-INFO",
    ]
    write(repo / "src" / "a.py", "changed\n")
    _, files = await diff(g, before, ["src"])
    assert files == ["src/a.py"]
    sha = await g.commit(["src"], "change a")
    assert git(repo, "show", "--name-only", "--format=", sha) == "src/a.py"
    plain = GitRepo(repo)  # `paths.build_output = []`: build output is an ordinary file again
    assert "src/__pycache__/a.cpython-311.pyc" in await plain.dirty_files(["src"])


async def test_ignored_folders_elsewhere_are_not_dirty_settings(repo: Path) -> None:
    """`status --ignored=matching` with an exclude pathspec listed every ignored folder as
    differing from the last commit; only ignored files under the paths asked about count."""
    write(repo / ".gitignore", "*.log\nnode_modules/\ndist/\n")
    git(repo, "commit", "-qam", "ignore more")
    write(repo / "node_modules" / "left-pad" / "index.js", "module.exports = 1\n")
    write(repo / "dist" / "out.js", "built\n")
    g = GitRepo(repo)
    assert await g.dirty_files(["cardrunner.toml", ".mcp.json"], ignored=True) == []
    write(repo / "cardrunner.log", "ignored but asked about\n")
    assert await g.dirty_files(["cardrunner.log"], ignored=True) == ["cardrunner.log"]


def fresh_snapshot(root: Path, paths: list[str]) -> str:
    """What a snapshot was before our indexes kept stat data: HEAD read fresh, `git add -A`."""
    env = {**os.environ, "GIT_INDEX_FILE": str(root.parent / "fresh-index")}
    for args in (["read-tree", "HEAD"], ["add", "-A", "--", *paths]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    tree = subprocess.run(["git", "write-tree"], cwd=root, env=env, capture_output=True, text=True)
    Path(env["GIT_INDEX_FILE"]).unlink()
    return tree.stdout.strip()


def entry_sizes(root: Path, index: Path) -> dict[str, int]:
    """Each entry's recorded size in `index` (0: no stat data, git hashes the file to compare)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    out = subprocess.run(
        ["git", "ls-files", "--debug"], cwd=root, env=env, capture_output=True, text=True
    ).stdout
    names = [line for line in out.splitlines() if not line.startswith(" ")]
    sizes = [
        int(line.split("size: ")[1].split()[0]) for line in out.splitlines() if "size: " in line
    ]
    return dict(zip(names, sizes, strict=True))


def looked_later(repo: Path) -> None:
    """The user's index as if git had looked 10 s after the files were written: stat data of a
    file changed in the seconds before a look is dropped (`forget_recent`), not kept."""
    index = repo / ".git" / "index"
    later = index.stat().st_mtime + 10
    os.utime(index, (later, later))


async def test_an_index_of_ours_keeps_the_stat_data_of_the_repositorys_own(
    repo: Path, tmp_path: Path
) -> None:
    """A snapshot's index begins with what git knows of each file, so `git add` hashes only the
    files that changed; the user's index is only read."""
    git(repo, "status")  # the user's index holds every file's stat
    looked_later(repo)
    before = index_bytes(repo)
    g = GitRepo(repo)
    index = tmp_path / "ours"
    await g.write_index(index, git(repo, "rev-parse", "HEAD"))
    assert entry_sizes(repo, index)["src/a.py"] == len("one\ntwo\nthree\n")
    write(repo / "src" / "a.py", "changed\n")  # a file whose content is not the tree's: no stat
    git(repo, "add", "src/a.py")
    looked_later(repo)
    index.unlink()
    await g.write_index(index, git(repo, "rev-parse", "HEAD"))
    sizes = entry_sizes(repo, index)
    assert sizes["src/a.py"] == 0 and sizes["src/old.txt"] == len("old\n")
    assert git(repo, "ls-files", "-s", "src/a.py") != git(repo, "ls-tree", "HEAD", "src/a.py")
    assert index_bytes(repo) != before  # (the `git add` above), and ours did not write it:
    assert git(repo, "diff", "--cached", "--name-only") == "src/a.py"


async def test_a_snapshot_sees_every_change_whatever_the_users_index_holds(repo: Path) -> None:
    """Staged work, a file marked assume-unchanged or skip-worktree, a repository config that
    trusts stat data blindly: the snapshot is the tree a fresh index gives, byte for byte."""
    git(repo, "config", "core.ignoreStat", "true")
    git(repo, "config", "core.trustctime", "false")
    git(repo, "config", "core.checkStat", "minimal")
    git(repo, "config", "core.untrackedCache", "true")
    write(repo / "src" / "old.txt", "staged\n")
    git(repo, "add", "src/old.txt")
    git(repo, "update-index", "--assume-unchanged", "src/a.py")
    write(repo / "src" / "a.py", "one\ntwo\nthree!\n")  # same size, hidden from `git status`
    git(repo, "update-index", "--skip-worktree", "src/data.bin")
    (repo / "src" / "data.bin").unlink()
    write(repo / "src" / "new.py", "x = 1\n")
    git(repo, "status")
    before = index_bytes(repo)
    g = GitRepo(repo)
    snapshot = await g.snapshot(["src"])
    assert snapshot == fresh_snapshot(repo, ["src"])
    _, files = await diff(g, git(repo, "rev-parse", "HEAD^{tree}"), ["src"])
    assert files == ["src/a.py", "src/data.bin", "src/new.py", "src/old.txt"]
    assert index_bytes(repo) == before


async def test_a_snapshot_after_the_user_staged_nothing_still_sees_an_edit(repo: Path) -> None:
    """The ordinary case the stat data speeds up: an edit after `git status` is hashed."""
    git(repo, "status")
    g = GitRepo(repo)
    base = await g.snapshot(["src"])
    write(repo / "src" / "a.py", "one\ntwo\nTHREE\n")  # same size, within the same second
    assert await g.snapshot(["src"]) == fresh_snapshot(repo, ["src"]) != base
