"""`cardrunner demo` without a folder: a new one under the system's temporary folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from cardrunner.demo.tour import new_demo_folder


def test_each_demo_gets_a_new_empty_folder_under_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    first, second = new_demo_folder(), new_demo_folder()
    assert first != second
    for folder in (first, second):
        assert folder.parent == tmp_path and folder.name.startswith("cardrunner-demo-")
        assert folder.is_dir() and not any(folder.iterdir())
