"""A sandbox refusal read from the output of each toolchain, with the fix for where it was."""

from __future__ import annotations

from pathlib import Path

from cardrunner.processes.refusal import refusals

ROOT = Path("/work/proj")

PYTEST = (
    "PytestCacheWarning: could not create cache path /work/proj/.pytest_cache/v/cache/nodeids: "
    "[Errno 30] Read-only file system: '/work/proj/.pytest_cache'"
)
TSC = (
    "error TS5033: Could not write file '/work/proj/node_modules/.vite/a': EROFS: read-only file "
    "system, mkdir '/work/proj/node_modules/.vite'.\n"
    "error TS5033: Could not write file '/work/proj/node_modules/.vite/b': EROFS: read-only file "
    "system, mkdir '/work/proj/node_modules/.vite'."
)
CARGO = "error: failed to open: /work/proj/Cargo.lock\n\nCaused by:\n  Read-only file system (os error 30)"
CACHE = "npm ERR! EROFS: read-only file system, mkdir '/home/dev/.npm/_cacache'"
OWN = "OSError: [Errno 30] Read-only file system: '/work/proj/cardrunner.toml'"


def test_each_toolchain_names_its_path() -> None:
    assert [r.path for r in refusals(PYTEST, ROOT)] == ["/work/proj/.pytest_cache"]
    (cargo,) = refusals(CARGO, ROOT)
    assert cargo.path == "/work/proj/Cargo.lock" and "Cargo.lock is read-only" in cargo.fix
    (tsc,) = refusals(TSC, ROOT)  # one folder, one fix: said once
    assert tsc.path == "/work/proj/node_modules/.vite/a"
    assert "node_modules is the checkout's, shown read-only in the run's worktree" in tsc.fix


def test_the_fix_depends_on_where_the_path_is() -> None:
    (cache,) = refusals(CACHE, ROOT)
    assert "outside the work tree" in cache.fix and "build_write" in cache.fix
    (own,) = refusals(OWN, ROOT)
    assert own.fix.startswith("cardrunner.toml belongs to git or cardrunner")
    assert "(read-only file system)" in str(own)


def test_output_without_a_refusal_names_nothing() -> None:
    assert refusals("FAILED tests/test_a.py::test_x - AssertionError\n1 failed", ROOT) == []
    assert refusals("Permission denied: '/work/proj/x'", ROOT) == []
