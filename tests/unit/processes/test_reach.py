"""Finding what leads an isolated run's tests out of its worktree, and mapping paths back."""

from __future__ import annotations

from pathlib import Path

from cardrunner.processes.sandbox import references
from cardrunner.tools.commands import parse_problems


def test_an_editable_install_naming_the_checkout_is_found_and_one_naming_the_worktree_is_not(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    worktree = checkout / ".cardrunner" / "worktrees" / "card"
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "__editable__.pkg-0.1.pth").write_text(f"{checkout / 'src'}\n")
    (site / "__editable___other_0_1_finder.py").write_text(
        f"MAPPING = {{'other': '{worktree / 'src' / 'other'}'}}\n"
    )
    (site / "distutils-precedence.pth").write_text("import os; var = 'SETUPTOOLS'\n")
    (site / "elsewhere.pth").write_text("/opt/somewhere/else\n")
    found = references(checkout, worktree, [site])
    assert found == [(site / "__editable__.pkg-0.1.pth", str(checkout / "src"))]


def test_problems_at_the_checkouts_path_are_the_worktrees_files(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    worktree = checkout / ".cardrunner" / "worktrees" / "card"
    (worktree / "src").mkdir(parents=True)
    (worktree / "src" / "calc.py").write_text("x = 1\n")
    output = f"{checkout / 'src' / 'calc.py'}:1:1: error: something is wrong\n"
    assert parse_problems(output, worktree) == []
    found = parse_problems(output, worktree, seen_as=checkout)
    assert [(p.path, p.line) for p in found] == [("src/calc.py", 1)]
