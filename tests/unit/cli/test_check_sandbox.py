"""`cardrunner check` where no bubblewrap can start: the one message, once, and exit 1."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cardrunner.cli import check
from cardrunner.cli.exiting import EXIT_FAILED
from cardrunner.processes import bwrapprobe
from tests.support.project import make_project
from tests.unit.processes.test_bwrapprobe import UID_MAP, fake_bwrap


def test_an_unusable_sandbox_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    make_project(root)
    fakes = [(fake_bwrap(tmp_path / "usr", UID_MAP), bwrapprobe.SYSTEM)]
    monkeypatch.setattr(bwrapprobe, "candidates", lambda: fakes)
    bwrapprobe.probe.cache_clear()
    try:
        assert check.run(argparse.Namespace(paths=[root], trying=False)) == EXIT_FAILED
    finally:
        bwrapprobe.probe.cache_clear()
    out = capsys.readouterr().out
    assert out.count("sandbox: unavailable, runs are refused: this machine does not allow") == 1
    assert out.count("sandbox:") == 1, out
