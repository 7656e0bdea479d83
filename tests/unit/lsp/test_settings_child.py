"""The language server's settings, validated in a child process: the same answer as
`load_settings` in the server (values and problems), and an error when the child fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cardrunner.config.loading import load_settings
from cardrunner.lsp.core import config
from cardrunner.lsp.core.config import validated


async def test_the_child_answers_what_load_settings_returns(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        'model = "claude-haiku-4-5"\nrun_priority = "normal"\n[limits]\nmax_rounds = -1\n'
        '[models.claude-haiku-4-5]\ndefault_effort = "low"\n'
    )
    overrides = {"limits": {"max_cost_usd": 0.5}}
    dump, problems = await validated(tmp_path, overrides)
    settings, found = load_settings(tmp_path, overrides)
    assert dump == settings.dump()
    assert problems == [str(p) for p in found] and len(problems) == 2
    assert dump["models"] == {"claude-haiku-4-5": {"default_effort": "low"}}  # only what is set


async def test_a_child_that_fails_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "CHILD", (sys.executable, "-c", "raise SystemExit(3)"))
    with pytest.raises(RuntimeError, match="exited with 3"):
        await validated(tmp_path, {})
