"""A repository that widens `paths.read` is asked about with what that reaches: which folder
leads into the home, and that the secret stores stay unreadable (tools/guard.py refuses them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.trust.requests import requests


def asked_about_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str) -> str:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "home" / "src" / "repo"
    root.mkdir(parents=True)
    (root / "cardrunner.toml").write_text(f"[paths]\nread = {read}\n")
    (found,) = [r for r in requests(root) if r.key == "paths.read"]
    return found.text


def test_a_read_path_that_reaches_the_home_says_so_and_what_stays_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = asked_about_reads(tmp_path, monkeypatch, '[".", "/", "../../../elsewhere"]')
    assert "the model may read outside the repository: /, ../../../elsewhere" in text
    assert "(/ reaches your home folder)" in text
    for hidden in ("~/.ssh", "~/.aws", "~/.git-credentials", "/proc", ".git"):
        assert hidden in text, text


def test_a_read_path_beside_the_home_is_not_said_to_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = asked_about_reads(tmp_path, monkeypatch, '["../shared"]')
    assert "reaches your home" not in text and "stay unreadable" in text, text
