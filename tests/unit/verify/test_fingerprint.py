"""The write area's incremental fingerprint is always the full snapshot's tree.

On a real git repository: random steps write, rewrite (same size and mtime second too), delete
and create files inside and outside the write area, or commit (HEAD moves); after each, the
kept index's tree and `GitRepo.snapshot`'s (which starts from the repository's own index and its
stat data) must both equal the truth: HEAD's tree with the write area added from an index that
knows no stat, so git hashes every file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardrunner.git.repo import GitRepo
from cardrunner.verify.calls import GitAreaState

FILES = ["src/a.py", "src/b.py", "src/deep/c.py", "docs/x.md", "build/out.o"]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "same-size", "delete", "commit"]),
        st.sampled_from(FILES),
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=12,
)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def repo(root: Path) -> GitRepo:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 0\n")
    (root / "docs").mkdir()
    (root / "docs" / "x.md").write_text("x\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return GitRepo(root, build_output=["build"])


def truth(root: Path, index: Path) -> str:
    """The write area as it is, every file hashed: an index read from HEAD has no stat data."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    index.unlink(missing_ok=True)
    for args in (["read-tree", "HEAD"], ["add", "-A", "--", "src"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    out = subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def apply(root: Path, kind: str, name: str, n: int) -> None:
    path = root / name
    if kind == "commit":
        git(root, "add", "-A")
        git(
            root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c", "--allow-empty"
        )
    elif kind == "delete":
        if path.exists():
            path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.stat() if path.exists() else None
        path.write_text(f"v = {n}\n")  # "same-size": same length, same mtime: racy-git's case
        if kind == "same-size" and old is not None:
            os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_the_incremental_fingerprint_is_the_snapshot(tmp_path_factory, steps) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("area")
    git_repo = repo(root)
    state = GitAreaState(git_repo, ["src"])

    index = tmp_path_factory.mktemp("truth") / "index"

    async def check() -> None:
        assert await state.fingerprint() == await git_repo.snapshot(["src"])
        for kind, name, n in steps:
            apply(root, kind, name, n)
            expected = truth(root, index)
            assert await state.fingerprint() == expected, (kind, name)
            assert await git_repo.snapshot(["src"]) == expected, (kind, name)

    asyncio.run(check())


def test_a_repositorys_config_cannot_make_a_rewrite_invisible(tmp_path: Path) -> None:
    """The kept index trusts stat data only as far as git does by default: a repository whose
    config says to ignore stat changes or ctime (it arrives with the code) still has a same-size
    rewrite with its old mtime put back seen by the next fingerprint (its ctime moved on: git
    compares whole seconds, so the rewrite comes in a later second than git's look)."""
    git_repo = repo(tmp_path)
    for key, value in (("core.ignoreStat", "true"), ("core.trustctime", "false")):
        git(tmp_path, "config", key, value)
    git(tmp_path, "config", "core.checkStat", "minimal")
    state = GitAreaState(git_repo, ["src"])
    path = tmp_path / "src" / "a.py"
    old = path.stat()
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns - 5_000_000_000))  # not racy

    async def check() -> None:
        before = await state.fingerprint()
        await state.fingerprint()  # the kept index now holds the file's stat
        again = path.stat()
        await asyncio.sleep(max(0.0, int(again.st_ctime) + 1.01 - time.time()))
        assert time.time() >= int(again.st_ctime) + 1  # the clock's second is past the ctime's
        path.write_text("a = 9\n")  # same size
        os.utime(path, ns=(again.st_atime_ns, again.st_mtime_ns))
        assert await state.fingerprint() != before

    asyncio.run(check())
