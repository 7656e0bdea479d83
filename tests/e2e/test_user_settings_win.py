"""The user's settings win over a repository's: through the real CLI and the real loader.

A repository may tighten what the user set (their config.toml, the CLI's flags), never widen
it: limits, prices (never below the built-in table), the sandbox, read paths. And a run log is a
file in the repository: a resume takes its limits from the current settings, never from the log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cardrunner.config.loading import load_settings
from cardrunner.config.model_table import MODELS
from tests.support.project import cli, fix_transcript, make_project, write_transcript

MODEL = "claude-sonnet-5-5"


def test_repository_prices_and_limits_of_zero_do_not_beat_the_users_cost_cap(
    tmp_path: Path,
) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        f"[limits]\nmax_cost_usd = 0\nmax_rounds = 0\n[prices.{MODEL}]\n"
        "input = 0\noutput = 0\ncache_read = 0\ncache_write = 0\n"
    )
    settings, problems = load_settings(tmp_path, {"limits": {"max_cost_usd": 0.05}})
    assert settings.limits.max_cost_usd == 0.05
    assert settings.price() == MODELS[MODEL].price  # the built-in table, not the repository's 0
    assert any(p.key == f"prices.{MODEL}" for p in problems)


def test_the_users_config_is_tightened_never_widened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user" / "cardrunner"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(
        '[limits]\nmax_rounds = 20\nmax_wall_seconds = 600\n[sandbox]\nmode = "bwrap"\n'
        '[paths]\nread = ["."]\n'
    )
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "cardrunner.toml").write_text(
        '[limits]\nmax_rounds = 0\nmax_wall_seconds = 60\n[sandbox]\nmode = "off"\n'
        'network = true\n[paths]\nread = ["/", "..", "src"]\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user"))
    s, problems = load_settings(repo)
    assert s.limits.max_rounds == 20  # the repository cannot switch it off
    assert s.limits.max_wall_seconds == 60  # but may tighten it
    assert s.sandbox.mode == "bwrap"
    assert s.sandbox.network is True  # the user did not set it: the trust question lists it
    assert s.paths.read == ["src"]  # only what lies inside the user's read paths
    widened = {p.key for p in problems}
    assert {"limits.max_rounds", "sandbox.mode", "paths.read"} <= widened


def test_a_resume_takes_its_limits_from_the_settings_not_from_the_log(tmp_path: Path) -> None:
    make_project(tmp_path)
    transcript = write_transcript(tmp_path / "t.json", fix_transcript())
    first = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes",
                "--max-rounds", "1")  # fmt: skip
    assert first.returncode == 1 and "max_rounds" in first.stderr, first.stderr
    [log] = (tmp_path / ".cardrunner" / "runs").glob("*.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    [start] = [line for line in lines if "limits" in (line.get("data") or {})]
    start["data"]["limits"]["max_rounds"] = 1000  # the log in the repository says 1000
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))

    resumed = cli(tmp_path, "run", "cards/fix-add.md", "--replay", str(transcript), "--yes",
                  "--resume", "--max-rounds", "1")  # fmt: skip
    assert resumed.returncode == 2, resumed.stderr
    assert "all 1 rounds are used" in resumed.stderr
