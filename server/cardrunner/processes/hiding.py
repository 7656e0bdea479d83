"""What the sandbox hides from project code: the user's home, its secret stores, host sockets.

Read-only is not private. A test the model wrote can read `~/.ssh/id_rsa` through a read-only
mount just as well, and one `connect()` to an SSH agent, the session bus or `docker.sock` is a
full escape. So inside the sandbox the home is an empty private folder with only the
toolchains (read-only) and their caches (writable) put back, every secret store is covered
again even where a cache or toolchain folder holds one, and `/run` (`/var/run`) is empty.

The model's own file tools refuse the same stores (`is_secret_store`, used by `tools/guard.py`)
whatever `paths.read` says, with `/proc` (`/proc/self/environ`) and mounted secrets besides. A
repository's own config can hold a token too (`actions/checkout` writes the job's into
`.git/config`): `GitConfig` is that file without it, which the sandbox shows in its place.

This module only answers "which paths" and "which text"; `processes/sandbox.py` turns them into
bwrap arguments.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cardrunner.config.secrets import remember

SECRET_STORES = (
    ".ssh", ".aws", ".azure", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
    ".docker", ".kube", ".config/gh", ".config/gcloud", ".config/cardrunner", ".config/hub",
    ".local/share/keyrings", ".password-store", ".mozilla", ".config/google-chrome",
    ".config/chromium", ".config/BraveSoftware", ".cargo/credentials", ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json", ".vault-token", ".config/git/credentials",
    ".oci", ".config/doctl", ".terraformrc", ".config/op", ".gem/credentials",
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


READ_REFUSED = (Path("/proc"), Path("/sys"), Path("/run/secrets"), Path("/var/run/secrets"))
"""Whole trees no file tool reads whatever `paths.read` says: every process's environment and
memory (`/proc/self/environ` holds the job's token), kernel state, mounted container secrets."""

SECRET_NAMES = frozenset({".git-credentials", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass"})
"""File names that hold credentials wherever they lie (a checkout, a build folder)."""

_URL_USERINFO = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/@]*)@")
_FILE_OPTION = re.compile(r"--file[= ]\s*(?P<path>\S+)")


def is_secret_store(path: Path, home: Path | None = None) -> bool:
    """True if the model's file tools must never read `path` (a real, resolved path): a secret
    store of the home (the same list the sandbox hides from commands), a tree of
    `READ_REFUSED`, or a file named like a credential store."""
    home = (home or Path.home()).resolve()
    refused = any(path.is_relative_to(top) for top in READ_REFUSED)
    return refused or is_secret(path, home) or path.name in SECRET_NAMES


@dataclass(frozen=True)
class GitConfig:
    """A repository config file with every value that carries a credential taken out.

    `actions/checkout` leaves the job's token in `.git/config` as
    `http.https://github.com/.extraheader`; a clone with a token in its URL keeps it in
    `remote.origin.url`; `url.<…>.insteadOf` and `credential.*` can carry or name one too. The
    sandbox shows commands this text instead of the file, so `git describe`, setuptools-scm and
    `git log` still work while the token stays out of reach."""

    text: str
    secrets: tuple[str, ...]
    """The values taken out (to be redacted wherever they turn up)."""
    stores: tuple[Path, ...]
    """Files a `credential.helper = store --file …` names: covered like the home's stores."""

    @classmethod
    def of(cls, path: Path) -> GitConfig:
        """`path` (a git config file) flattened, includes resolved, credentials removed."""
        found = subprocess.run(
            ["git", "config", "--file", str(path), "--includes", "--null", "--list"],
            capture_output=True,
            check=False,
            env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME")},
        )
        kept: list[tuple[str, str | None]] = []
        secrets: list[str] = []
        stores: list[Path] = []
        for entry in found.stdout.decode("utf-8", "replace").split("\0"):
            if not entry:
                continue
            key, newline, value = entry.partition("\n")
            cleaned = _cleaned(key, value if newline else None, secrets, stores)
            if cleaned is not None:
                kept.append(cleaned)
        return cls(_ini(kept), tuple(secrets), tuple(stores))


def _cleaned(
    key: str, value: str | None, secrets: list[str], stores: list[Path]
) -> tuple[str, str | None] | None:
    """(key, value) to keep, None to drop; what was taken out goes into `secrets`/`stores`."""
    section, _, rest = key.lower().partition(".")
    name = rest.rsplit(".", 1)[-1]
    if value is None:
        return (key, None)
    if section == "credential" or name == "extraheader":
        if name == "helper" and (store := _FILE_OPTION.search(value)):
            stores.append(Path(os.path.expanduser(store.group("path"))))
        secrets.extend(_header_secrets(value) if name == "extraheader" else ())
        return None
    if section == "include" or section == "includeif":
        return None  # already resolved into the list (`--includes`)
    userinfo = _URL_USERINFO.match(value)
    base = key.split(".", 1)[1]
    if section == "url" and (rewrite := _URL_USERINFO.match(base)) and rewrite.group("userinfo"):
        secrets.extend(_userinfo_secrets(base))
        return None
    if userinfo and userinfo.group("userinfo"):
        secrets.extend(_userinfo_secrets(value))
        return (key, userinfo.group("scheme") + value[userinfo.end() :])
    return (key, value)


def _header_secrets(value: str) -> list[str]:
    """The credential of an `Authorization: basic|bearer …` header, and the token in a Basic
    one (base64 of `user:token`)."""
    credential = value.split()[-1] if value.split() else ""
    found = [value.strip(), credential]
    with contextlib.suppress(ValueError):  # not base64 (a bearer token): kept as it is
        found.append(base64.b64decode(credential, validate=True).decode().partition(":")[2])
    return found


def _userinfo_secrets(url: str) -> list[str]:
    info = match.group("userinfo") if (match := _URL_USERINFO.match(url)) else ""
    user, _, password = info.partition(":")
    return [password or user]


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\b", "\\b") + '"'


def _ini(entries: list[tuple[str, str | None]]) -> str:
    """Entries as `git config --list` names them, written back as a config file."""
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        head = (section, sub or None)
        if head != current:
            current = head
            quoted = sub.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'[{section} "{quoted}"]' if sub else f"[{section}]")
        lines.append(f"\t{name}" if value is None else f"\t{name} = {_quote(value)}")
    return "\n".join(lines) + "\n"


SYSTEM_GIT_CONFIG = Path("/etc/gitconfig")
"""The system's git config (the home's is hidden with the home): a runner image may keep a
credential helper or a token there too."""


def git_config_files(root: Path) -> list[Path]:
    """The config files git reads in the work tree `root` (the system's, the repository's
    common `config` and `config.worktree` files), absolute paths of existing files."""
    found = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    dirs = [Path(line) for line in found.stdout.splitlines() if line]
    files = [d / name for d in reversed(dirs) for name in ("config", "config.worktree")]
    return [f for f in dict.fromkeys([SYSTEM_GIT_CONFIG, *files]) if f.is_file()]


def clean_git_configs(
    root: Path, run_dir: Path
) -> tuple[tuple[tuple[Path, Path], ...], tuple[Path, ...]]:
    """Write each repository config file of `root` without its credentials next to the run's
    folder; the credentials it held are redacted from now on. Returns (copy, original) pairs
    and the credential stores the config names (to be covered like the home's)."""
    pairs: list[tuple[Path, Path]] = []
    stores: list[Path] = []
    for number, real in enumerate(git_config_files(root)):
        cleaned = GitConfig.of(real)
        remember(*cleaned.secrets)
        stores += [p for p in cleaned.stores if os.path.lexists(p)]
        copy = run_dir.parent / f"{run_dir.name}.gitconfig{number}"
        copy.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(cleaned.text)
        pairs.append((copy, real))
    return tuple(pairs), tuple(stores)
