"""The user's own cardrunner folder: `$XDG_CONFIG_HOME/cardrunner`, else `~/.config/cardrunner`.

What lives here belongs to the user, never to a repository: `config.toml` (settings in the
shape of cardrunner.toml that every repository starts from and can only tighten,
config/precedence.py) and the trust grants (trust/store.py). A repository cannot move it: the
folder comes from the environment cardrunner was started in, and one that would lie inside the
repository being run is not used (`outside`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

FOLDER = "cardrunner"
CONFIG_FILE = "config.toml"


def user_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's cardrunner folder (it may not exist yet)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CONFIG_HOME", "")
    if not base or not Path(base).is_absolute():  # the XDG spec: a relative value is ignored
        base = str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(base) / FOLDER


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The user's own settings file."""
    return user_dir(env) / CONFIG_FILE


def outside(folder: Path, root: Path) -> bool:
    """True when `folder` is not inside the repository `root` (a repository never holds the
    user's own settings or grants, whatever the environment says)."""
    return not folder.resolve().is_relative_to(root.resolve())
