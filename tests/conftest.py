"""What every test's cardrunner sees of the user: a config folder of its own, and trust.

The suite never reads the developer's own cardrunner folder (`~/.config/cardrunner`: their
config.toml and trust grants would change what a test's run does): `XDG_CONFIG_HOME` points at an
empty folder of this test session. And the suite runs cards the way CI does, with
`CARDRUNNER_TRUST=1` (docs/security.md): the repositories the tests build are the tests' own.
Both are set before any test module is imported, so a language server whose environment a module
captures at import (tests/support/lsp.py `server_config`) gets them too. The trust tests take
both away again (tests/support/trust.py) to ask the real question.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_OWN = {"XDG_CONFIG_HOME": "", "CARDRUNNER_TRUST": "1"}
_SAVED: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    _OWN["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="cardrunner-user-")
    for name, value in _OWN.items():
        _SAVED[name] = os.environ.get(name)
        os.environ[name] = value


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_OWN["XDG_CONFIG_HOME"], ignore_errors=True)
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
