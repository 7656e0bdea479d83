"""The file tools: list, read and write inside the folders the settings allow, checked in code.

A prompt that says "only write under src" is a wish; `PathGuard` is the fence. Every path the
model passes is resolved (symlinks included) and must land inside an allowed folder, and never in
`.git/` or `.cardrunner/`. Writes are atomic, and a file the user edited after the run last wrote
it is not overwritten: the model is told to read it again and merge. All file I/O runs in a
worker thread, because the language server's event loop must never block on a disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import stat
import threading
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice
from cardrunner.agent.gate import MAX_RESULT_CHARS, Tool, ToolContext, ToolError
from cardrunner.config.paths import STATE_DIR
from cardrunner.config.readfile import FileTooLarge, NotRegularFile, read_regular
from cardrunner.tools.base import FunctionTool, Handler
from cardrunner.tools.base import schema as make_schema
from cardrunner.tools.edit import edit_tool

_HIDDEN_BY_HFS = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points some file systems ignore in names, so `.g\u200cit` would be `.git` there."""

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", ".venv"})
MAX_LIST_ENTRIES = 500
MAX_READ_BYTES = 8_000_000


def is_forbidden_name(part: str) -> bool:
    """True for `.git` and `.cardrunner` in any spelling a file system may treat as the same."""
    name = _HIDDEN_BY_HFS.sub("", part).rstrip(". ").casefold()
    return name in {".git", STATE_DIR, "git~1"}


def _clean_folder(name: str) -> str:
    return Path(name).as_posix().rstrip("/") or "."


class PathGuard:
    """Resolves model-given paths and refuses any outside the allowed read or write folders."""

    def __init__(self, root: Path, read: list[str], write: list[str]) -> None:
        self.root = Path(os.path.realpath(root))
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
        return self._resolve(path, self._write, "write")

    def is_writable(self, rel: str) -> bool:
        """True if `rel` resolves inside a write folder (for callers that only need a yes/no)."""
        try:
            self.resolve_write(rel)
        except ToolError:
            return False
        return True

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


def _read_or_none(path: Path, limit: int = MAX_READ_BYTES * 8) -> bytes | None:
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
            if path in self._known and _digest(_read_or_none(path)) != self._known[path]:
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


def _list(guard: PathGuard, base: Path, shown: str, recursive: bool) -> str:
    if base.is_file():
        return guard.display(base)
    if not base.is_dir():
        raise ToolError(f"{shown} does not exist. List a parent folder to find the right path.")
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in _SKIPPED_DIRS and not is_forbidden_name(d)]
        names = [f for f in filenames if not is_forbidden_name(f)]
        entries += [guard.display(here / f) for f in names]
        if not recursive:
            entries += [guard.display(here / d) + "/" for d in dirnames]
            break
        if len(entries) > 50_000:
            break
    if not entries:
        return f"{shown} has no files."
    entries.sort()
    shown_entries, used = list[str](), 0
    for entry in entries[:MAX_LIST_ENTRIES]:
        if used + len(entry) + 1 > MAX_RESULT_CHARS - 200:
            break
        shown_entries.append(entry)
        used += len(entry) + 1
    more = len(entries) - len(shown_entries)
    note = [f"[{more} more entries not shown: list a narrower folder]"] if more > 0 else []
    return "\n".join(shown_entries + note)


def _page(text: str, shown: str, start: int, count: int | None, explicit: bool) -> str:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if not lines:
        return f"[{shown} is empty]"
    if start > total:
        raise ToolError(f"{shown} has only {total} lines; start_line {start} is past its end.")
    chosen = lines[start - 1 : start - 1 + count] if count else lines[start - 1 :]
    budget, used, body = MAX_RESULT_CHARS - 300, 0, list[str]()
    for line in chosen:
        if body and used + len(line) > budget:
            break
        body.append(line)
        used += len(line)
    end = start + len(body) - 1
    cut = len(body) < len(chosen)
    if not explicit and not cut:
        return text
    head = f"[{shown}: lines {start}-{end} of {total}]\n" if explicit or cut else ""
    tail = f"\n[call read_file with start_line={end + 1} to read on]" if end < total else ""
    return head + "".join(body) + tail


def file_tools(
    guard: PathGuard, conflicts: ConflictGuard | None = None, timeout: float = 120.0
) -> list[Tool]:
    """list_files, read_file, write_file and edit_file, all behind `guard`, bounded by `timeout`."""
    known = conflicts or ConflictGuard()

    def listing(path: str, recursive: bool) -> str:
        return _list(guard, guard.resolve_read(path), path, recursive)

    async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
        return await asyncio.to_thread(listing, args.get("path", "."), args.get("recursive", True))

    def read(path: str, start: int, count: int | None, explicit: bool) -> str:
        target = guard.resolve_read(path)
        shown = guard.display(target)
        if target.is_dir():
            raise ToolError(f"{shown} is a folder; use list_files to see what is in it.")
        try:
            data = _read_or_none(target, MAX_READ_BYTES)
        except ToolError:
            raise
        except FileTooLarge as exc:
            raise ToolError(f"{shown} is too large to read ({exc}).") from exc
        known.seen(target, data)
        if data is None:
            raise ToolError(f"{shown} does not exist. Use list_files to find the right path.")
        if b"\x00" in data[:8192]:
            raise ToolError(f"{shown} is a binary file ({len(data)} bytes); read_file shows text.")
        try:
            text, note = data.decode("utf-8"), ""
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            note = "[not valid UTF-8: undecodable bytes are shown as \ufffd]\n"
        return note + _page(text, shown, start, count, explicit)

    async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
        start, count = args.get("start_line"), args.get("max_lines")
        explicit = start is not None or count is not None
        return await asyncio.to_thread(read, args["path"], start or 1, count, explicit)

    def write(path: str, content: str) -> str:
        target = guard.resolve_write(path)
        shown = guard.display(target)
        if target.is_dir():
            raise ToolError(f"{shown} is a folder; give the path of a file inside it.")
        data = content.encode("utf-8")
        known.write(target, shown, data)
        return f"wrote {len(data)} bytes to {shown}"

    async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            return await asyncio.to_thread(write, args["path"], args["content"])
        except EditConflict as exc:  # the user hears of it too, not only the model
            ctx.emit(Notice(level="warning", message=f"kept your edit: {exc}"))
            raise

    return _described(guard, known, [list_files, read_file, write_file], timeout)


def _described(
    guard: PathGuard, known: ConflictGuard, handlers: list[Handler], timeout: float
) -> list[Tool]:
    """The file tools as the model sees them, around their handlers (in that order)."""
    list_files, read_file, write_file = handlers
    readable, writable = ", ".join(guard.read_folders), ", ".join(guard.write_folders)
    path_prop = {"type": "string", "description": "Relative to the workspace root."}
    return [
        FunctionTool(
            "list_files",
            "Lists the files under a folder, one path per line relative to the workspace root "
            "(sorted; .git, node_modules, .venv and caches skipped; at most 500). Use it to find "
            "your way before reading. recursive=false lists only the folder's own entries "
            f"(folders end in /). Readable folders: {readable}.",
            make_schema({"path": path_prop, "recursive": {"type": "boolean"}}),
            list_files,
            timeout=timeout,
        ),
        FunctionTool(
            "read_file",
            "Reads a text file. Long files are cut: pass start_line (1-based) and max_lines to "
            f"read a part. Readable folders: {readable}.",
            make_schema(
                {
                    "path": path_prop,
                    "start_line": {"type": "integer", "minimum": 1},
                    "max_lines": {"type": "integer", "minimum": 1},
                },
                required=["path"],
            ),
            read_file,
            timeout=timeout,
        ),
        FunctionTool(
            "write_file",
            "Writes a whole file: creates it or replaces its content (parent folders are "
            "created). Always pass the complete new content, never a diff or an excerpt; to "
            "change part of an existing file, use edit_file. "
            f"Writable folders: {writable}. If the user edited the file since you last wrote "
            "it, the write is refused: read it again and merge.",
            make_schema({"path": path_prop, "content": {"type": "string"}}, ["path", "content"]),
            write_file,
            timeout=timeout,
        ),
        edit_tool(guard, known, timeout),
    ]
