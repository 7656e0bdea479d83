"""A card's history lives in git: real `cardrunner run`s, then the history read back from the
trailers of their card commits, while the card itself keeps only its last run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from cardrunner.card.card import parse_card
from cardrunner.git.branches import BranchRepo
from tests.support.project import (
    cli,
    final,
    fix_transcript,
    git,
    make_project,
    slug_of,
    write_transcript,
)


async def test_the_history_of_real_runs_reads_back_from_the_card_commits(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    card_path = make_project(root)
    failing = write_transcript(tmp_path / "fail.json", [final("RESULT: failed: not today")])
    fixing = write_transcript(tmp_path / "fix.json", fix_transcript())
    for transcript in (failing, failing, failing, fixing):
        proc = cli(root, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes")
        assert proc.returncode in (0, 1), proc.stderr

    history = await BranchRepo(root).card_runs(slug_of("cards/fix-add.md"))
    assert [r.result for r in history] == ["done", "failed", "failed", "failed"]
    logs = sorted(p.stem for p in (root / ".cardrunner" / "runs").glob("*.jsonl"))
    assert sorted(r.id or "" for r in history) == logs
    assert history[0].commit and history[0].rounds == 7 and history[0].evidence

    # each run's trailers say exactly what its commit wrote into the card
    card_commits = git(root, "log", "--format=%H", "--grep=Result:", "--", "cards/fix-add.md")
    assert len(card_commits.split()) == 4
    for sha, record in zip(card_commits.split(), history, strict=True):
        committed, _ = parse_card(git(root, "show", f"{sha}:cards/fix-add.md"), card_path)
        # the card keeps the short record; the ledger is the trailers' (and the log's) alone
        assert committed is not None and committed.last_run == dataclasses.replace(
            record, evidence=None
        )

    # plain git reads it too, and the card keeps one record however many runs it had
    results = git(root, "log", "--format=%(trailers:key=Result,valueonly)", "--", "cards")
    assert results.split() == ["done", "failed", "failed", "failed"]
    meta = yaml.safe_load(card_path.read_text().split("---")[1])
    assert "runs" not in meta and meta["last_run"]["id"] == history[0].id
    assert git(root, "status", "--porcelain") == ""

    shown = cli(root, "log", "cards/fix-add.md")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "Adding two numbers subtracts them — 4 runs, newest first"
    assert [line.split(" · ")[1] for line in lines[1:]] == ["done", *["failed (model_failed)"] * 3]
    assert f"commit {history[0].commit[:10]}" in lines[1] and history[0].log in lines[1]
