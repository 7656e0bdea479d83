"""The fences of the file tools: which paths the model may read and write, and whose edit wins.

A prompt that says "only write under src" is a wish; `PathGuard` is the fence. Every path the
model passes is resolved (symlinks included) and must land inside an allowed folder, and never in
`.git/` or `.cardrunner/`, nor in a secret store. `paths.read = ["/"]` reaches the home, and the
sandbox hides `~/.aws` or `~/.ssh` from commands, not from the model's own file tools; so the
same list (`processes/hiding.py`), with `/proc` (`/proc/self/environ` holds the job's token) and
credential files by name, is refused here whatever the settings say. `ConflictGuard` keeps a file the user edited after the run last saw
it: the write is refused and the model is told to read it again and merge. The file tools
(`files.py`, `edit_file` among them) stand on this module.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import threading
from collections.abc import Sequence
from pathlib import Path

from cardrunner.agent.toolpool import ToolError
from cardrunner.config.paths import STATE_DIR
from cardrunner.config.readfile import NotRegularFile, read_regular
from cardrunner.processes.hiding import is_secret_store

_HIDDEN_BY_HFS = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points some file systems ignore in names, so `.g\u200cit` would be `.git` there."""

MAX_READ_BYTES = 8_000_000


def is_forbidden_name(part: str) -> bool:
    """True for `.git` and `.cardrunner` in any spelling a file system may treat as the same."""
    name = _HIDDEN_BY_HFS.sub("", part).rstrip(". ").casefold()
    return name in {".git", STATE_DIR, "git~1"}


def _clean_folder(name: str) -> str:
    return Path(name).as_posix().rstrip("/") or "."


class PathGuard:
    """Resolves model-given paths and refuses any outside the allowed read or write folders."""

    def __init__(
        self, root: Path, read: list[str], write: list[str], home: Path | None = None,
        cards: Sequence[str] = (),
    ) -> None:  # fmt: skip
        self.root = Path(os.path.realpath(root))
        self._cards = [Path(os.path.realpath(self.root / c)) for c in cards]
        """The cards folder and the card being run: what the run is judged by is never the
        model's to write, whatever `paths.write` covers."""
        self.home = Path(os.path.realpath(home or Path.home()))
        """Whose secret stores are refused (ours; a test's own home)."""
        self._write = [(_clean_folder(n), Path(os.path.realpath(self.root / n))) for n in write]
        extra = [(_clean_folder(n), Path(os.path.realpath(self.root / n))) for n in read]
        self._read = self._write + [f for f in extra if f[1] not in {w[1] for w in self._write}]

    @property
    def read_folders(self) -> list[str]:
        """The folders the model may read (write folders included), as configured."""
        return list(dict.fromkeys(n for n, _ in self._read))

    @property
    def write_folders(self) -> list[str]:
        """The folders the model may write, as configured."""
        return list(dict.fromkeys(n for n, _ in self._write))

    def resolve_read(self, path: str) -> Path:
        """The real path of `path` if the model may read it; `ToolError` otherwise."""
        return self._resolve(path, self._read, "read")

    def resolve_write(self, path: str) -> Path:
        """The real path of `path` if the model may write it; `ToolError` otherwise."""
        real = self._resolve(path, self._write, "write")
        if any(real == card or real.is_relative_to(card) for card in self._cards):
            raise ToolError(
                f"{path} is a card file. Cards say what the run is judged by: no tool may "
                "write them, whatever paths.write says. Change the code, not the card."
            )
        return real

    def is_writable(self, rel: str) -> bool:
        """True if `rel` resolves inside a write folder (for callers that only need a yes/no)."""
        try:
            self.resolve_write(rel)
        except ToolError:
            return False
        return True

    def is_secret(self, real: Path) -> bool:
        """True if the resolved path `real` is, or lies in, a secret store (listings skip it)."""
        return is_secret_store(real, self.home)

    def display(self, real: Path) -> str:
        """A resolved path as the model should write it: relative to the workspace root."""
        if real.is_relative_to(self.root):
            return real.relative_to(self.root).as_posix() or "."
        for name, folder in self._read:
            if real.is_relative_to(folder):
                return (Path(name) / real.relative_to(folder)).as_posix()
        return real.as_posix()

    def _resolve(self, path: str, folders: list[tuple[str, Path]], verb: str) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise ToolError("The path is empty. Use a path relative to the workspace root.")
        if "\x00" in path:
            raise ToolError(f"{path!r} contains a NUL byte. Use a plain relative path.")
        if any(is_forbidden_name(p) for p in re.split(r"[\\/]+", path)):
            raise ToolError(f"{path} is inside .git or .cardrunner, which no tool may touch.")
        try:
            real = os.path.realpath(os.path.join(self.root, path))
            _refuse_loops(real)
        except (OSError, ValueError) as exc:
            raise ToolError(f"{path} cannot be resolved ({exc}). Use another path.") from exc
        resolved = Path(real)
        if self.is_secret(resolved):
            raise ToolError(
                f"{path} is a secret store (credentials, keys, a process's environment); no "
                "tool may read or write it, whatever paths.read says."
            )
        for _, folder in folders:
            if resolved.is_relative_to(folder):
                base = self.root if resolved.is_relative_to(self.root) else folder
                if any(is_forbidden_name(p) for p in resolved.relative_to(base).parts):
                    raise ToolError(
                        f"{path} leads into .git or .cardrunner, which no tool may touch."
                    )
                return resolved
        names = (
            ", ".join(n for n, _ in folders) if verb == "write" else ", ".join(self.read_folders)
        )
        raise ToolError(
            f"{path} is outside the folders you may {verb}: {names}. "
            "Use a path relative to the workspace root."
        )


def _refuse_loops(real: str) -> None:
    """`realpath` leaves a looping symlink in place; the existing part must be fully real."""
    existing = real
    while not os.path.lexists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            return
        existing = parent
    if os.path.realpath(existing, strict=True) != existing:
        raise OSError(f"symlinks changed while resolving {existing}")


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_or_none(path: Path, limit: int = MAX_READ_BYTES * 8) -> bytes | None:
    """The file's bytes (None: missing); a FIFO, device or socket is a ToolError, never a wait."""
    try:
        return read_regular(path, limit)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotRegularFile as exc:
        kind = str(exc).rsplit(" is ", 1)[-1]
        if kind == "a folder":
            return None
        raise ToolError(
            f"{path.name} is {kind}; the file tools only read and write regular files"
        ) from exc


class EditConflict(ToolError):
    """Someone else changed the file since the run last saw it; their text was kept."""


class ConflictGuard:
    """Notices a file edited by someone else since this run last read or wrote it; keeps theirs.

    It remembers the hash of what the run last saw of each file: what `read_file` showed, or
    what `write_file` wrote. A write over a file that changed on disk since is refused (the
    user's text stays and the model is told to read it again); reading it again counts as
    having seen the other edits, so the next write (the merge) goes through.
    """

    def __init__(self) -> None:
        self._known: dict[Path, str | None] = {}
        self._lock = threading.Lock()

    def seen(self, path: Path, data: bytes | None) -> None:
        """The run read `path` (None: found it missing); its current state is now known."""
        with self._lock:
            self._known[path] = _digest(data)

    def write(self, path: Path, shown: str, data: bytes) -> None:
        """Write `data` atomically unless `path` changed on disk since the run last saw it."""
        with self._lock:
            if path in self._known and _digest(read_or_none(path)) != self._known[path]:
                raise EditConflict(
                    f"{shown} was changed outside this run since you last read or wrote it; "
                    "the other version is kept. Read it again and merge"
                )
            atomic_write(path, data)
            self._known[path] = _digest(data)


def atomic_write(target: Path, data: bytes) -> None:
    """Write `data` to a temp file next to `target`, then rename it over (keeping the mode)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
