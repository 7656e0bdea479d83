"""The sandbox every command that runs project code goes through: builds, tests, the app, MCP servers.

The model writes code and then asks to run it, so that code must not have the user's rights. On
Linux it runs under bubblewrap: the whole file system read-only except the run's write folders,
the run's own folder and a private `/tmp`; `.git` and `.cardrunner` read-only even inside a write
folder; no network unless `[sandbox] network = true`; its own PID namespace, so when the command
returns every process it started (a `setsid` daemon included) is gone. The environment comes from
an allow-list, never from ours minus a deny-list: a `GITHUB_TOKEN` the user happens to have set
must not reach a test the model wrote.

This module only builds argv and environments; `processes/command.py` spawns and kills.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cardrunner.config.secrets import is_secret_name

BASE_ENV = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
        "COLORTERM", "NO_COLOR",
        # the interpreter's own variables: a virtualenv or conda env must keep working
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONHOME",
        "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
        # Windows basics (only reachable with sandbox = "off"): programs fail without them
        "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP",
        "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES",
    }
)  # fmt: skip
"""What a command inherits from our environment without being configured."""

BASE_PREFIXES = ("LC_",)

Mode = Literal["bwrap", "off"]


def allowed_name(name: str, extra: Iterable[str] = ()) -> bool:
    """True if a variable of this name may be inherited: allow-listed and not secret-looking."""
    listed = name in BASE_ENV or name.startswith(BASE_PREFIXES) or name in set(extra)
    return listed and not is_secret_name(name)


def filter_env(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The part of `environ` a command may see: the allow-list plus the names `extra` adds.

    Secret-looking names (`*_TOKEN`, `*_KEY`, cloud credentials, the SSH agent …) never pass,
    even when `extra` names them; nor do exported shell functions (`() { …`), which bash would
    run in every shell the command starts.
    """
    names = frozenset(extra)
    return {k: v for k, v in environ.items() if allowed_name(k, names) and not v.startswith("()")}


class SandboxUnavailable(Exception):
    """bubblewrap cannot start here; str() says why and how to opt out."""


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap works on this machine, found by running it once."""

    ok: bool
    binary: str | None
    detail: str


@functools.cache
def probe(network: bool = False) -> Probe:
    """Run `bwrap … true` once per process: a binary that exists may still lack namespaces."""
    binary = shutil.which("bwrap")
    if binary is None:
        return Probe(False, None, "bubblewrap (bwrap) is not installed")
    argv = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]
    argv += [] if network else ["--unshare-net"]
    try:
        done = subprocess.run(
            [*argv, "--die-with-parent", "--", "true"],
            capture_output=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, binary, f"bubblewrap did not run: {exc}")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        return Probe(False, binary, f"bubblewrap cannot create its namespaces here: {why}")
    return Probe(True, binary, "bubblewrap")


def describe(mode: Mode, network: bool) -> str:
    """The mode in force, in one line, for `cardrunner check` and the editor's status."""
    if mode == "off":
        return 'sandbox: off (sandbox = "off" in the settings): commands run with your rights'
    found = probe(network)
    if not found.ok:
        return (
            f"sandbox: unavailable ({found.detail}); runs are refused until it works "
            'or the settings say sandbox = "off"'
        )
    net = "network allowed" if network else "no network"
    return f"sandbox: bubblewrap ({net}; writes only to the write area and a private /tmp)"


def _program(argv0: str, cwd: Path, path: str) -> str:
    """The program `argv0` names, as an absolute path; the OSError `exec` would have raised."""
    found = str(cwd / argv0) if "/" in argv0 else shutil.which(argv0, path=path)
    if found is None or not os.path.lexists(found):
        raise FileNotFoundError(2, "No such file or directory", argv0)
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        raise PermissionError(13, "Permission denied", argv0)
    return os.path.abspath(found)


@functools.cache
def interpreter_folders() -> tuple[Path, ...]:
    """Where the interpreter running cardrunner and its packages live, if that is under /tmp.

    Commands run with this interpreter first on PATH (`python -m pytest`, the UI server as
    `python -m cardrunner.uiserver`), so the private /tmp must not hide a virtualenv, or an
    editable checkout, that sits there — as a fresh clone under /tmp has them."""
    import cardrunner

    tmp = Path("/tmp").resolve()
    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path]
    candidates.append(str(Path(cardrunner.__file__).resolve().parent.parent))
    found: dict[Path, None] = {}
    for entry in candidates:
        folder = Path(entry).resolve() if entry else None
        if folder is not None and folder.is_dir() and folder.is_relative_to(tmp):
            found[folder] = None
    return tuple(found)


@dataclass(frozen=True)
class Sandbox:
    """How one run confines its commands. Built once per run; argv is built per spawn."""

    mode: Mode
    root: Path
    """The run's work root (the checkout, or its worktree)."""
    write: tuple[str, ...]
    """Write folders relative to `root`; only these (that exist) are writable."""
    run_dir: Path
    """The run's own folder (screenshots, MCP logs): writable."""
    network: bool = False
    env_names: tuple[str, ...] = ()
    read: tuple[Path, ...] = field(default_factory=tuple)
    """More folders that must stay visible although they lie under /tmp (the main checkout)."""
    binary: str = "bwrap"

    @classmethod
    def start(
        cls,
        mode: Mode,
        root: Path,
        write: Iterable[str],
        run_dir: Path,
        *,
        network: bool = False,
        env_names: Iterable[str] = (),
        read: Iterable[Path] = (),
    ) -> Sandbox:
        """A sandbox for a run; raises `SandboxUnavailable` if bwrap is asked for but broken."""
        binary = "bwrap"
        if mode == "bwrap":
            found = probe(network)
            if not found.ok or found.binary is None:
                raise SandboxUnavailable(
                    f"the sandbox for builds, tests, the app and MCP servers cannot start: "
                    f"{found.detail}. Install bubblewrap (Debian/Ubuntu: apt-get install "
                    'bubblewrap), or set sandbox = "off" in cardrunner.toml to run them '
                    "with your own rights."
                )
            binary = found.binary
        return cls(
            mode, root, tuple(write), run_dir, network, tuple(env_names), tuple(read), binary
        )

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The allow-listed part of our environment, plus `extra` (set by cardrunner itself)."""
        env = filter_env(os.environ, self.env_names)
        env.update(extra or {})
        if self.mode == "bwrap":
            env["TMPDIR"] = "/tmp"
        return env

    def wrap(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> list[str]:
        """`argv` as run inside the sandbox. Raises the OSError a direct `exec` would raise."""
        program = _program(argv[0], cwd, env.get("PATH", os.defpath))
        if self.mode == "off":
            return [program, *argv[1:]]
        out = [self.binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        out += ["--tmpfs", "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        out += [] if self.network else ["--unshare-net"]
        out += ["--die-with-parent"]
        for folder in dict.fromkeys([*interpreter_folders(), *self.read, self.root]):
            if folder.exists():  # re-shown after the private /tmp hid them
                out += ["--ro-bind", str(folder), str(folder)]
        for rel in self.write:
            folder = Path(os.path.realpath(self.root / rel))
            if folder.is_dir() and folder.is_relative_to(self.root.resolve()):
                out += ["--bind", str(folder), str(folder)]
        for guarded in (self.root / ".git", self.root / ".cardrunner"):
            if guarded.exists():  # read-only again, even inside a write folder
                out += ["--ro-bind", str(guarded), str(guarded)]
        self.run_dir.mkdir(parents=True, exist_ok=True)
        out += ["--bind", str(self.run_dir), str(self.run_dir), "--chdir", str(cwd)]
        return [*out, "--", program, *argv[1:]]
