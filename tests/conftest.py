"""What every test's cardrunner sees of the user: a config folder of its own, and trust.

The suite never reads the developer's own cardrunner folder (`~/.config/cardrunner`: their
config.toml and trust grants would change what a test's run does): `XDG_CONFIG_HOME` points at an
empty folder of this test session. And the suite runs cards the way CI does, with
`CARDRUNNER_TRUST=1` (docs/security.md): the repositories the tests build are the tests' own.
Both are set when this file is imported — before any other conftest, since pytest loads the
conftests of the paths it is given parents first — so a language server whose environment a
module captures at import (tests/e2e/conftest.py `server_config()`) gets them too. The trust
tests take both away again (tests/support/trust.py) to ask the real question.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_SAVED = {name: os.environ.get(name) for name in ("XDG_CONFIG_HOME", "CARDRUNNER_TRUST")}
_USER = tempfile.mkdtemp(prefix="cardrunner-user-")
os.environ["XDG_CONFIG_HOME"] = _USER
os.environ["CARDRUNNER_TRUST"] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_USER, ignore_errors=True)
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
