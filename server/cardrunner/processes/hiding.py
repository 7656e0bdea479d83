"""What the sandbox hides from project code: the user's home, its secret stores, host sockets.

Read-only is not private. A test the model wrote can read `~/.ssh/id_rsa` through a read-only
mount just as well, and one `connect()` to an SSH agent, the session bus or `docker.sock` is a
full escape. So inside the sandbox the home is an empty private folder with only the
toolchains (read-only) and their caches (writable) put back, every secret store is covered
again even where a cache or toolchain folder holds one, and `/run` (`/var/run`) is empty.

This module only answers "which paths"; `processes/sandbox.py` turns them into bwrap arguments.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SECRET_STORES = (
    ".ssh", ".aws", ".azure", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
    ".docker", ".kube", ".config/gh", ".config/gcloud", ".config/cardrunner", ".config/hub",
    ".local/share/keyrings", ".password-store", ".mozilla", ".config/google-chrome",
    ".config/chromium", ".config/BraveSoftware", ".cargo/credentials", ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json", ".vault-token", ".config/git/credentials",
)  # fmt: skip
"""Home-relative paths that hold credentials, keys or browser profiles: never visible inside."""

HOST_SOCKET_DIRS = (Path("/run"), Path("/var/run"))
"""Where the host's sockets live (session bus, agents, `docker.sock`): empty inside."""

AGENT_VARIABLES = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS")
"""Variables of ours that name a socket; the path they name is covered wherever it lies."""


def expand(entry: str, home: Path) -> Path:
    """`~/.cache` in the settings as an absolute path under `home` (the real or a test's)."""
    if entry == "~" or entry.startswith("~/"):
        return home / entry[2:]
    return Path(entry)


def is_secret(path: Path, home: Path) -> bool:
    """True if `path` is a secret store or lies inside one."""
    return any(path.is_relative_to(home / store) for store in SECRET_STORES)


def agent_sockets(environ: Mapping[str, str]) -> list[Path]:
    """Socket paths our own environment names (`unix:path=/run/…,guid=…` for the bus)."""
    found: list[Path] = []
    for name in AGENT_VARIABLES:
        value = environ.get(name, "")
        if value.startswith("unix:"):
            value = next((p[5:] for p in value[5:].split(",") if p.startswith("path=")), "")
        value = value.split(":", 1)[0]  # GPG_AGENT_INFO is path:pid:version
        if value.startswith("/"):
            found.append(Path(value))
    return found


@dataclass(frozen=True)
class Hidden:
    """The home and what comes back into it, resolved for one sandbox."""

    home: Path
    read: tuple[Path, ...]
    """Toolchain folders in the home, shown read-only (those that exist)."""
    write: tuple[Path, ...]
    """Cache folders the builds may write (those that exist)."""
    covered: tuple[Path, ...]
    """Secret stores and agent sockets that exist and would be visible otherwise."""

    @classmethod
    def find(
        cls,
        home: Path,
        build_read: Iterable[str],
        build_write: Iterable[str],
        environ: Mapping[str, str],
    ) -> Hidden:
        """Keep the folders that exist and are no secret store; list what must be covered.
        The home is taken at its real path: a symlinked `/home/me` is hidden where it lies."""
        home = home.resolve()

        def usable(entries: Iterable[str]) -> tuple[Path, ...]:
            paths = [expand(e, home) for e in entries]
            return tuple(p for p in dict.fromkeys(paths) if p.is_dir() and not is_secret(p, home))

        stores = [home / store for store in SECRET_STORES]
        sockets = agent_sockets(environ)
        covered = [p for p in [*stores, *sockets] if os.path.lexists(p)]
        return cls(home, usable(build_read), usable(build_write), tuple(covered))
