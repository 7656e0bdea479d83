"""`BranchRepo.card_history`: one pass over the history, on a real repository."""

from __future__ import annotations

from pathlib import Path

from cardrunner.card.record import RunRecord
from cardrunner.git.branches import BranchRepo
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


async def test_card_runs_reads_the_records_from_card_commit_trailers(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "Dev")
    work = commit(tmp_path, {"src/a.py": "1"}, "card: A\n\nCard: a\nRun: r1\nRounds: 4")
    first = f"Card: a\nRun: r1\nResult: done\nRounds: 4\nCost-USD: 0.5\nCommit: {work}"
    commit(tmp_path, {"cards/a.md": "1"}, f"card: A → Done\n\nState.\n\n{first}")
    commit(
        tmp_path, {"cards/b.md": "1"}, "card: B → Done\n\nState.\n\nCard: b\nRun: r2\nResult: done"
    )
    again = "Card: a\nRun: r3\nResult: failed\nReason: max_rounds\nRounds: many\nEvidence: 0: x\nEvidence: 1: y"
    commit(tmp_path, {"cards/a.md": "2"}, f"card: A → Failed\n\nState.\n\n{again}")
    commit(tmp_path, {"README": "x"}, "docs\n\nResult: mentioned in passing, not a trailer\n\nbody")
    runs = await BranchRepo(tmp_path).card_runs("a")
    assert runs == [
        RunRecord(id="r3", result="failed", reason="max_rounds", evidence=["0: x", "1: y"]),
        RunRecord(id="r1", result="done", rounds=4, cost_usd=0.5, commit=work),
    ]
    assert (await BranchRepo(tmp_path).card_history()).recorded == {"a": [work]}
