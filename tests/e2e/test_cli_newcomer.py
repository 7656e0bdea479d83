"""The CLI as a newcomer meets it: --version, help, replay from cardrunner.toml, check, log,
re-running a Done card. Real subprocesses in real git repositories; no API key anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support.project import cli, fix_transcript, git, make_project, write_transcript


def front_matter(card: Path) -> dict[str, object]:
    return yaml.safe_load(card.read_text().split("---")[1])


def replay_project(tmp_path: Path) -> Path:
    """The fix-add project with `replay` set only in cardrunner.toml (a folder of transcripts)."""
    card = make_project(tmp_path, top_toml='replay = "transcripts"\n')
    (tmp_path / "transcripts").mkdir()
    write_transcript(tmp_path / "transcripts" / "fix-add.json", fix_transcript())
    return card


def test_version_names_the_installed_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    proc = cli(tmp_path, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"cardrunner {version('cardrunner')}"


def test_replay_set_only_in_cardrunner_toml_runs_to_done_without_a_key(tmp_path: Path) -> None:
    card = replay_project(tmp_path)
    proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes")  # cli() drops every ANTHROPIC_ var
    assert proc.returncode == 0, proc.stderr
    assert "model replay:fix-add.json" in proc.stderr
    assert front_matter(card)["state"] == "Done"


def test_without_key_or_replay_the_error_names_both_ways_out(tmp_path: Path) -> None:
    make_project(tmp_path)
    proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes")
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY" in proc.stderr and "--replay" in proc.stderr
    assert "`replay` in cardrunner.toml" in proc.stderr


def test_a_done_card_is_not_rerun_without_a_yes(tmp_path: Path) -> None:
    card = replay_project(tmp_path)
    assert cli(tmp_path, "run", "cards/fix-add.md", "--yes").returncode == 0
    head = git(tmp_path, "rev-parse", "HEAD")
    last = front_matter(card)["last_run"]
    refused = cli(tmp_path, "run", "cards/fix-add.md", "--no-commit")  # stdin is not a tty
    assert refused.returncode == 2
    assert "already Done" in refused.stderr and "--yes" in refused.stderr
    assert git(tmp_path, "rev-parse", "HEAD") == head
    assert front_matter(card)["last_run"] == last  # not run: the record is the same
    write_transcript(
        tmp_path / "transcripts" / "fix-add.json",
        [{"content": [{"type": "text", "text": "RESULT: failed: nothing left"}]}],
    )
    again = cli(tmp_path, "run", "cards/fix-add.md", "--yes")
    assert again.returncode == 1, again.stderr  # it ran: the transcript says failed
    now = front_matter(card)["last_run"]
    assert isinstance(now, dict) and isinstance(last, dict)
    assert now["id"] != last["id"] and now["result"] == "failed"


def test_log_totals_are_the_cards_and_a_non_log_is_exit_2(tmp_path: Path) -> None:
    card = replay_project(tmp_path)
    run = cli(tmp_path, "run", "cards/fix-add.md", "--yes")
    assert run.returncode == 0, run.stderr
    entry = front_matter(card)["last_run"]  # type: ignore[index]
    log = tmp_path / entry["log"]
    shown = cli(tmp_path, "log", str(log))
    assert shown.returncode == 0, shown.stderr
    result_line = next(line for line in shown.stdout.splitlines() if line.startswith("result:"))
    assert f"{entry['tokens']:,} tokens" in result_line
    assert f"{entry['tokens']:,} tokens" in run.stderr  # the live view's summary
    records = [json.loads(line) for line in log.read_text().splitlines()]
    cached = sum(
        r["data"].get("cache_read_input_tokens", 0) for r in records if r["type"] == "round"
    )
    assert cached > 0 and f"cache read {cached:,}" in result_line
    for name, text in (("notes.jsonl", '{"a": 1}\n'), ("empty.jsonl", ""), ("card.md", "# x\n")):
        (tmp_path / name).write_text(text)
        bad = cli(tmp_path, "log", name)
        assert bad.returncode == 2, (name, bad.stdout)
        assert "is not a run log" in bad.stderr
    missing = cli(tmp_path, "log", "nowhere.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_check_flags_what_would_mislead_a_run(tmp_path: Path) -> None:
    make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    toml.write_text(
        toml.read_text()
        .replace('write = ["src"]', 'write = ["src", "../outside"]')
        .replace('model = "claude-sonnet-5-5"', 'model = "unpriced-model"')
        .replace("max_rounds = 30", "max_rounds = 30\nmax_cost_usd = 1.5")
    )
    card = tmp_path / "cards" / "fix-add.md"
    card.write_text(card.read_text().replace("state: New", "state: New\nsate: Done\ncolour: 1"))
    proc = cli(tmp_path, "check", ".")
    assert proc.returncode == 1
    out = proc.stdout
    assert "paths.write: '../outside' is outside the repository" in out
    assert "model 'unpriced-model' has no price" in out and "[prices.unpriced-model]" in out
    assert (
        "cards/fix-add.md:4: warning: unknown key 'sate' is ignored (did you mean 'state'?)" in out
    )
    assert "cards/fix-add.md:5: warning: unknown key 'colour' is ignored" in out
    (tmp_path / "cards" / "fix-add.md").unlink()
    (tmp_path / "cards").rmdir()
    assert "the cards folder 'cards' does not exist" in cli(tmp_path, "check", ".").stdout
    nowhere = cli(tmp_path, "check", "nowhere")
    assert nowhere.returncode == 2 and "nowhere: no such file or folder" in nowhere.stdout


def test_every_option_has_help_text() -> None:
    import argparse

    from cardrunner.cli.main import _parser

    def walk(parser: argparse.ArgumentParser, where: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    missing += walk(sub, f"{where} {name}")
                for choice in action._choices_actions:
                    if not choice.help:
                        missing.append(f"{where} {choice.dest}")
            elif not action.help:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(_parser(), "cardrunner") == []


def test_the_repositorys_own_cards_pass_check() -> None:
    repo = Path(__file__).resolve().parents[2]
    cards = sorted((repo / "cards").glob("*.md"))
    assert len(cards) >= 3
    proc = cli(repo, "check", "cards")
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.strip().splitlines()
    # `check` first says which sandbox is in force for the workspace and how its tests are
    # counted, then what it found.
    assert lines[-1] == "no problems found", proc.stdout
    assert lines[0].startswith(f"{repo.name}: sandbox: "), proc.stdout
    assert all(line.startswith(f"{repo.name}: tests counted from ") for line in lines[1:-1])


def test_a_missing_module_is_named_as_such_not_as_a_stale_transcript(tmp_path: Path) -> None:
    card = make_project(tmp_path)
    toml = tmp_path / "cardrunner.toml"
    toml.write_text(
        toml.read_text().replace(
            'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]',
            'test = ["python", "-m", "no_such_test_runner_here"]',
        )
    )
    git(tmp_path, "commit", "-qam", "a test runner that is not installed")
    steps = [
        {"content": [{"type": "tool_use", "name": "run_tests", "input": {}}], "stop_reason": "tool_use"},
        {"content": [{"type": "tool_use", "name": "list_files", "input": {"path": "src"}}], "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "RESULT: done"}], "expect": ["1 passed"]},
    ]  # fmt: skip
    transcript = write_transcript(tmp_path.parent / f"{tmp_path.name}-missing.json", steps)
    proc = cli(tmp_path, "run", "cards/fix-add.md", "--yes", "--replay", str(transcript))
    assert proc.returncode == 1
    assert "the module 'no_such_test_runner_here' is not installed" in proc.stderr
    assert "no longer fits" not in proc.stderr
    assert front_matter(card)["reason"] == "model_failed"
