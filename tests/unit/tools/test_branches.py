"""`BranchRepo.card_history`: one pass over the history, on a real repository."""

from __future__ import annotations

from pathlib import Path

from cardrunner.tools.branches import BranchRepo
from tests.support.project import git


def commit(root: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


async def test_card_history_maps_each_card_to_its_commits_and_their_files(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "Dev")
    commit(tmp_path, {"README.md": "x"}, "start\n\nCard: not-a-trailer-here\n\nbody text")
    first = commit(tmp_path, {"src/a b.py": "1", "src/c.py": "1"}, "card: A\n\nCard: a\nRun: r1")
    commit(tmp_path, {"src/d.py": "1"}, "plain work, no trailer")
    both = commit(tmp_path, {"src/c.py": "2"}, "cards: A and B\n\nCard: a\nCard: b\nRun: r2")
    history = await BranchRepo(tmp_path).card_history()
    assert history.commits == {"a": [both, first], "b": [both]}
    assert history.files[first] == {"src/a b.py", "src/c.py"}
    assert history.files[both] == {"src/c.py"}


async def test_a_repository_without_commits_has_no_history(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    history = await BranchRepo(tmp_path).card_history()
    assert history.commits == {} and history.files == {}
