"""Where things are in a workspace: its repository, its cards, and cardrunner's own `.cardrunner/`.

Run logs, live markers, a run's working folder, the process ledgers and the worktrees of
isolated runs all live under `.cardrunner/`. Building these paths in one place keeps every
reader and writer (the runner, the sweep, `check`, the editor's review files) agreeing on them,
and keeps the folder out of git: it ignores itself the first time it is made.

A workspace's cards come from its own `cards/` folder, or a Backlog.md project's tasks. A
repository that already keeps its work on a Backlog.md board (`backlog/config.yml`, the tasks in
`backlog/tasks/`) is run as it is: unless the settings name a `cards` folder, the board's tasks are
the cards, for the CLI, the language server's index and CI alike (card/backlog.py reads the board).

Which repository a path belongs to (`find_root`) is the folder every verb takes its settings from;
a monorepo package's folder with a cardrunner.toml of its own belongs to the root that declares it.

The user's own cardrunner folder (`user_dir`) is `$XDG_CONFIG_HOME/cardrunner`, else
`~/.config/cardrunner`. What lives there belongs to the user, never to a repository:
`config.toml` (settings in the shape of cardrunner.toml that every repository starts from and
can only tighten, config/precedence.py) and the trust grants (trust/grants.py). A repository
cannot move it: the folder comes from the environment cardrunner was started in, and one that
would lie inside the repository being run is not used (`outside`).
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".cardrunner"
"""The state folder's name; no tool may read or write inside it (tools/files.py)."""


@dataclass(frozen=True)
class StatePaths:
    """The `.cardrunner/` paths of one workspace `root`. Building a path touches nothing."""

    root: Path

    @property
    def state(self) -> Path:
        """The state folder itself."""
        return self.root / STATE_DIR

    @property
    def runs(self) -> Path:
        """Run logs (`<id>.jsonl`), live markers (`<id>.pid`), run folders (`<id>/`)."""
        return self.state / "runs"

    def log(self, run_id: str) -> Path:
        """The JSONL log of one run (DESIGN.md: the run log)."""
        return self.runs / f"{run_id}.jsonl"

    def live_marker(self, run_id: str) -> Path:
        """Present while the run's process lives (run/liveness.py)."""
        return self.runs / f"{run_id}.pid"

    def run_dir(self, run_id: str) -> Path:
        """A run's own folder: screenshots, MCP scratch files, the editor's review copies."""
        return self.runs / run_id

    @property
    def processes(self) -> Path:
        """One ledger per cardrunner process of the process groups it started (run/liveness.py)."""
        return self.state / "processes"

    def agent_session(self, session_id: str) -> Path:
        """Which card an Agent Client Protocol session runs (`session/load` reads it back)."""
        return self.state / "acp-sessions" / f"{session_id}.json"

    def worktree(self, run_id: str) -> Path:
        """The git worktree the isolated run `run_id` works in: one per run, never shared by
        two cards or two runs of one card (only a resume of that run comes back to it; the
        card's next run may take the folder back, reset to its commit: run/workarea.py)."""
        return self.state / "worktrees" / run_id

    def lock(self, card_slug: str) -> Path:
        """The lock file of the card whose identity is `card_slug` (run/liveness.py)."""
        return self.state / "locks" / f"{card_slug}.lock"

    def ensure(self) -> StatePaths:
        """Make the state folder (ignoring itself, so git never sees it) and return self."""
        ignore = self.state / ".gitignore"
        if not ignore.exists():
            with contextlib.suppress(OSError):
                self.state.mkdir(parents=True, exist_ok=True)
                ignore.write_text("*\n", encoding="utf-8")
        return self


BACKLOG_CONFIG = "backlog/config.yml"
BACKLOG_TASKS = "backlog/tasks"


def default_cards(root: Path) -> str:
    """The cards folder a workspace has without a `cards` setting."""
    return BACKLOG_TASKS if (root / BACKLOG_CONFIG).is_file() else "cards"


def find_root(start: Path) -> Path:
    """The workspace root: the nearest folder upwards with cardrunner.toml or .git (resolved).

    Found from `start` as it is spelled, not from where a link in it leads: `cards/x.md`
    linked to a file of another repository belongs to this one (where it is then refused:
    `escapes`), and must not make a run keep its state and log in the other. A folder that is
    itself a link is never a root (unless it is the folder asked about)."""
    spelled = Path(os.path.abspath(start))
    is_dir = spelled.is_dir()
    for folder in [spelled, *spelled.parents] if is_dir else list(spelled.parents):
        if folder.is_symlink() and folder != spelled:  # the folder asked for may be a link
            continue
        if (folder / "cardrunner.toml").is_file() or (folder / ".git").exists():
            return _declaring(folder) or folder.resolve()
    resolved = start.resolve()
    return resolved if resolved.is_dir() else resolved.parent


def _declaring(package: Path) -> Path | None:
    """The repository root whose cardrunner.toml declares `package` as one of its
    `[packages]`, when `package` is such a package's folder (its own cardrunner.toml only adds
    to the root's, config/settingsfiles.py); None otherwise. Looks no further than git's root."""
    found = declared_package(package)
    return found.root if found is not None and found.folder == package.resolve() else None


@dataclass(frozen=True)
class DeclaredPackage:
    """A package of a monorepo, as the root's cardrunner.toml declares it."""

    root: Path
    name: str
    folder: Path


def declared_package(folder: Path) -> DeclaredPackage | None:
    """The package `folder` is, or lies in, when an enclosing folder's cardrunner.toml declares
    it as one of its `[packages]`; None otherwise. Never looks past the first folder holding
    `.git` (a package that is a repository of its own is its own root), as `find_root` does:
    the language server, given a package's folder as its workspace, serves the root it names."""
    if (folder / ".git").exists():
        return None
    inside = folder.resolve()
    for parent in folder.parents:
        own = parent / "cardrunner.toml"
        if own.is_file():
            try:
                data = tomllib.loads(own.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return None
            declared = data.get("packages")
            for name, entry in declared.items() if isinstance(declared, dict) else []:
                package = _below(parent.resolve(), entry)
                if package is not None and inside.is_relative_to(package):
                    return DeclaredPackage(parent.resolve(), str(name), package)
        if (parent / ".git").exists():
            return None
    return None


def _below(root: Path, entry: object) -> Path | None:
    """The folder a `[packages.NAME]` entry's `path` names, when it lies below `root` (the
    settings refuse any other: `..`, `.`, an absolute path, a link leading out)."""
    path = entry.get("path") if isinstance(entry, dict) else None
    if not isinstance(path, str):
        return None
    folder = (root / path).resolve()
    return folder if folder != root and folder.is_relative_to(root) else None


def escapes(path: Path, root: Path) -> str | None:
    """Why the card or task file `path` may not be used in the repository `root`, or None.

    A repository is a stranger's text: its `cards/x.md` (or a whole `backlog/tasks`, or a
    `../`) may lead to a file of another repository or the user's home. Such a file is never
    read, rewritten or sent to the model, and no run keeps state for it."""
    real = Path(os.path.realpath(path))  # a link loop stays as it is (and fails to read)
    base = Path(os.path.realpath(root))
    if real.is_relative_to(base):
        return None
    return f"{path} leads outside the repository {base} (to {real}); it is refused"


# The toolchain folders in the home a sandbox shows by default (`[sandbox]`'s defaults): plain
# data here, so the sandbox (processes/sandbox.py) reads them without the settings' models and
# the idle language server describes its sandbox without loading pydantic.
BUILD_WRITE = [
    "~/.cache", "~/.npm", "~/.cargo/registry", "~/.cargo/git", "~/.rustup", "~/.gradle/caches",
    "~/.m2/repository", "~/go/pkg/mod", "~/.local/share/pnpm", "~/.yarn/berry/cache",
    "~/.bun/install/cache", "~/.deno",
]  # fmt: skip
"""Toolchain caches builds and tests may write by default (those that exist)."""

BUILD_READ = [
    "~/.cargo/bin", "~/.local/bin", "~/.local/lib", "~/.pyenv", "~/.nvm", "~/.volta", "~/.bun/bin",
    "~/go/bin", "~/.sdkman", "~/.rbenv", "~/.asdf", "~/.local/share/mise", "~/.local/share/fnm",
]  # fmt: skip
"""Toolchains in the home shown read-only by default (those that exist)."""


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
