"""A new worktree gets the checkout's ignored files that code imports, and nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cardrunner.config.settings import BUILD_OUTPUT
from cardrunner.git.branches import BranchRepo
from cardrunner.run.workarea import MAX_FILE_BYTES, seed_worktree


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


async def test_generated_files_are_copied_folders_build_output_and_giants_are_not(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("from pkg._version import v\n")
    (root / ".gitignore").write_text("_version.py\n.venv/\n*.pyc\nbig.bin\n.env\nlink.py\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (root / "src" / "pkg" / "_version.py").write_text("v = '1.0'\n")  # what the install wrote
    (root / ".env").write_text("MODE=test\n")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "site.py").write_text("installed\n")
    (root / "src" / "pkg" / "mod.pyc").write_bytes(b"\0compiled")
    (root / "big.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    os.symlink("/etc/hostname", root / "src" / "link.py")
    repo = BranchRepo(root, BUILD_OUTPUT)
    worktree = tmp_path / "wt"
    await repo.add_worktree(worktree, "cardrunner/run-1")
    copied = await seed_worktree(repo, worktree, BUILD_OUTPUT)
    assert sorted(copied) == [".env", "src/pkg/_version.py"]
    assert (worktree / "src" / "pkg" / "_version.py").read_text() == "v = '1.0'\n"
    assert not (worktree / ".venv").exists()
    assert not (worktree / "src" / "pkg" / "mod.pyc").exists()
    assert not (worktree / "big.bin").exists()
    assert not (worktree / "src" / "link.py").is_symlink()
    assert await BranchRepo(worktree).dirty_files(["."]) == []  # ignored there too: no change
