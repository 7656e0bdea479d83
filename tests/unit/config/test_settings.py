"""Settings: sources and precedence, and problems that name the file, the key and the expectation."""

from __future__ import annotations

from pathlib import Path

from cardrunner.config.loading import has_clash, load_settings


def test_defaults_are_those_of_the_design(tmp_path: Path) -> None:
    s, problems = load_settings(tmp_path)
    assert problems == []
    assert (s.limits.max_rounds, s.limits.max_tokens, s.limits.max_consecutive_tool_errors) == (
        60,
        400_000,
        3,
    )
    assert s.cards == "cards" and s.model == "claude-sonnet-5-5"
    assert s.price() is not None and s.price("unknown-model") is None


def test_cardrunner_toml_wins_over_pyproject_and_overrides_win_over_both(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cardrunner]\nmodel = "a"\ncards = "board"\n[tool.cardrunner.limits]\nmax_rounds = 5\n'
    )
    (tmp_path / "cardrunner.toml").write_text('model = "b"\n[limits]\nmax_tokens = 1000\n')
    s, problems = load_settings(tmp_path, {"limits": {"max_rounds": 3}, "model": "c"})
    assert problems == []
    assert (s.model, s.cards, s.limits.max_rounds, s.limits.max_tokens) == ("c", "board", 3, 1000)


def test_a_bad_value_names_file_key_and_expectation_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        'model = "m"\n[limits]\nmax_rounds = "many"\nmax_tokens = 10\n[paths]\nwrite = "src"\n'
    )
    s, problems = load_settings(tmp_path)
    text = [str(p) for p in problems]
    assert any("cardrunner.toml: limits.max_rounds" in t and "integer" in t for t in text)
    assert any("paths.write" in t and "list" in t for t in text)
    assert (s.model, s.limits.max_rounds, s.limits.max_tokens, s.paths.write) == (
        "m",
        60,
        10,
        ["src"],
    )


def test_unknown_keys_and_broken_toml_are_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text("[limits]\nmax_roundz = 3\n")
    s, problems = load_settings(tmp_path)
    assert any("max_roundz" in str(p) for p in problems) and s.limits.max_rounds == 60
    (tmp_path / "cardrunner.toml").write_text("model = \n")
    s, problems = load_settings(tmp_path)
    assert any("invalid TOML" in str(p) for p in problems)


def test_mcp_servers_from_both_places_and_a_name_clash(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text('[mcp.ui]\ncommand = "python"\nargs = ["-m", "x"]\n')
    (tmp_path / ".mcp.json").write_text(
        '{"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}'
    )
    s, problems = load_settings(tmp_path)
    assert problems == [] and set(s.mcp) == {"ui", "web"} and s.mcp["web"].url
    (tmp_path / ".mcp.json").write_text(
        '{"mcpServers": {"ui": {"command": "node", "args": ["s.js"]}}}'
    )
    s, problems = load_settings(tmp_path)
    assert has_clash(problems)
    assert any(".mcp.json" in str(p) and "cardrunner.toml" in str(p) for p in problems)


def test_an_mcp_server_needs_a_command_or_a_url(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text('[mcp.bad]\nargs = ["x"]\n')
    s, problems = load_settings(tmp_path)
    assert "bad" not in s.mcp and any("mcp.bad" in str(p) and "command" in str(p) for p in problems)


def test_run_priority_defaults_to_low_and_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    assert load_settings(tmp_path)[0].run_priority == "low"
    (tmp_path / "cardrunner.toml").write_text('run_priority = "idle"\n')
    s, problems = load_settings(tmp_path)
    assert problems == [] and s.run_priority == "idle"
    (tmp_path / "cardrunner.toml").write_text('run_priority = "normal"\n')
    s, problems = load_settings(tmp_path)
    assert s.run_priority == "low"
    [problem] = [str(p) for p in problems]
    assert problem.startswith("cardrunner.toml: run_priority: ")
    assert all(word in problem for word in ("'low'", "'lowest'", "'idle'", '"normal"'))
