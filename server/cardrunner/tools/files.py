"""The file tools (list, read, write, edit) inside the folders the settings allow, checked in code.

Every path the model passes goes through the fences of `guard.py` (`PathGuard`: inside an
allowed folder, never in `.git/` or `.cardrunner/`; `ConflictGuard`: a file the user edited after
the run last wrote it is not overwritten). Writes are atomic. All file I/O runs in a
worker thread, because the language server's event loop must never block on a disk.

`read_file` may take a file's text from a `source` instead (an ACP client's editor, whose
buffers may hold changes not saved yet): the guard decides first and the file must exist and be
text on disk; the source only supplies the text shown. What the conflict guard records, and
what `edit_file`, `write_file` and the review work on, stays the file as saved.

`edit_file` makes exact replacements in a file, so a large file needs no full rewrite. Writing a
whole 2,000-line file to change three lines costs the output of 2,000 lines — and on a long file
can hit `max_tokens` in the middle of the call. An edit names the exact old text and its
replacement; each old text must occur exactly once (in the file as the earlier edits of the same
call left it), so an edit can never land in the wrong place. Either every edit applies or none
does. The current file on disk is what is edited, so a user's concurrent change elsewhere in the
file is kept.
"""

from __future__ import annotations

import asyncio
import bisect
import fnmatch
import itertools
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Notice
from cardrunner.agent.toolpool import MAX_RESULT_CHARS, Tool, ToolContext, ToolError
from cardrunner.config.readfile import FileTooLarge
from cardrunner.tools.base import FunctionTool, Handler
from cardrunner.tools.base import schema as make_schema
from cardrunner.tools.guard import (
    MAX_READ_BYTES,
    ConflictGuard,
    EditConflict,
    PathGuard,
    is_forbidden_name,
    read_or_none,
)

MAX_EDITS = 50


@dataclass(frozen=True)
class Replaced:
    """Where one edit landed: 1-based first line and the line counts before and after."""

    line: int
    old_lines: int
    new_lines: int


def apply_edits(text: str, edits: list[dict[str, str]], shown: str) -> tuple[str, list[Replaced]]:
    """`text` with every edit applied in order; ToolError naming the first that cannot apply."""
    done: list[Replaced] = []
    for n, edit in enumerate(edits, start=1):
        old, new = edit["old_text"], edit["new_text"]
        if not old:
            raise ToolError(f"edit {n}: old_text is empty; give the exact text to replace.")
        count = text.count(old)
        if count == 0:
            hint = " (it is in the file with other line endings)" if _crlf_only(text, old) else ""
            raise ToolError(
                f"edit {n}: old_text was not found in {shown}{hint}. Nothing was changed. Read "
                "the file again and copy the text exactly, whitespace and indentation included."
            )
        if count > 1:
            raise ToolError(
                f"edit {n}: old_text occurs {count} times in {shown}. Nothing was changed. "
                "Include more of the surrounding lines so that it occurs exactly once."
            )
        at = text.index(old)
        done.append(Replaced(text.count("\n", 0, at) + 1, old.count("\n") + 1, new.count("\n") + 1))
        text = text[:at] + new + text[at + len(old) :]
    return text, done


def _crlf_only(text: str, old: str) -> bool:
    return "\r\n" in text and old.replace("\n", "\r\n") in text


def _summary(shown: str, done: list[Replaced]) -> str:
    places = [f"line {r.line} ({r.old_lines} → {r.new_lines} lines)" for r in done[:10]]
    more = ", …" if len(done) > 10 else ""
    return f"edited {shown}: {len(done)} replacement(s) at {', '.join(places)}{more}"


def edit_tool(guard: PathGuard, known: ConflictGuard, timeout: float = 120.0) -> Tool:
    """`edit_file` behind `guard`, sharing the write tool's record of what the run wrote."""

    def edit(path: str, edits: list[dict[str, str]]) -> str:
        target = guard.resolve_write(path)
        shown = guard.display(target)
        data = read_or_none(target)
        if data is None:
            raise ToolError(f"{shown} does not exist; create it with write_file.")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{shown} is not valid UTF-8 text; edit_file changes text.") from None
        new_text, done = apply_edits(text, edits, shown)
        known.seen(target, data)  # edited as it is now: a concurrent change elsewhere stays
        known.write(target, shown, new_text.encode("utf-8"))
        return _summary(shown, done)

    async def edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
        return await asyncio.to_thread(edit, args["path"], args["edits"])

    edit_item = make_schema(
        {
            "old_text": {"type": "string", "description": "Exact text now in the file."},
            "new_text": {"type": "string", "description": "What replaces it."},
        },
        ["old_text", "new_text"],
    )
    return FunctionTool(
        "edit_file",
        "Changes part of an existing file by exact replacements, so a large file needs no full "
        "rewrite. Each old_text must occur exactly once in the file (after the edits before it "
        "in the same call); copy it exactly from read_file, with enough lines around it to be "
        "unique. All edits apply or none does. Writable folders: "
        f"{', '.join(guard.write_folders)}.",
        make_schema(
            {
                "path": {"type": "string", "description": "Relative to the workspace root."},
                "edits": {
                    "type": "array",
                    "items": edit_item,
                    "minItems": 1,
                    "maxItems": MAX_EDITS,
                },
            },
            ["path", "edits"],
        ),
        edit_file,
        timeout=timeout,
    )


TextSource = Callable[[Path], Awaitable[str | None]]
"""The text of a file the guard allowed (its resolved path), or None to show the disk's."""

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", ".venv"})
MAX_LIST_ENTRIES = 500


def _listed(guard: PathGuard, folder: Path, name: str) -> bool:
    """False for `.git`, `.cardrunner` and secret stores: a listing does not even name them."""
    return not is_forbidden_name(name) and not guard.is_secret(folder / name)


def _list(guard: PathGuard, base: Path, shown: str, recursive: bool) -> str:
    if base.is_file():
        return guard.display(base)
    if not base.is_dir():
        raise ToolError(f"{shown} does not exist. List a parent folder to find the right path.")
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if _listed(guard, here, d) and d not in _SKIPPED_DIRS]
        names = [f for f in filenames if _listed(guard, here, f)]
        entries += [guard.display(here / f) for f in names]
        if not recursive:
            entries += [guard.display(here / d) + "/" for d in dirnames]
            break
        if len(entries) > 50_000:
            break
    if not entries:
        return f"{shown} has no files."
    entries.sort()
    shown_entries = _fitting(entries[:MAX_LIST_ENTRIES])
    more = len(entries) - len(shown_entries)
    if more > 0 and recursive and (shape := _shape(guard, base, shown, entries)):
        return shape
    note = [f"[{more} more entries not shown: list a narrower folder]"] if more > 0 else []
    return "\n".join(shown_entries + note)


def _fitting(lines: list[str], budget: int = MAX_RESULT_CHARS - 200) -> list[str]:
    sizes = list(itertools.accumulate(len(line) + 1 for line in lines))
    return lines[: bisect.bisect_right(sizes, budget)]


_GENERATED = frozenset({"dist", "build", "out", "target", "coverage", ".next", ".turbo", ".cache"})


def _shape(guard: PathGuard, base: Path, shown: str, entries: list[str]) -> str | None:
    """A folder too big to list, by its shape: its folders with the files under each (its own
    first, dot folders next, ignored or generated ones last), then its files. A 17,000-file
    repository shows `lib/` and `test/` in one call, not 500 paths of `.changeset/`. None with
    fewer than two folders: their paths say more."""
    prefix = "" if guard.display(base) == "." else guard.display(base) + "/"
    counts: Counter[str] = Counter()
    files = []
    for entry in entries:
        top, sep, _ = entry[len(prefix) :].partition("/")
        if sep:
            counts[top] += 1
        else:
            files.append(top)
    if len(counts) < 2:
        return None
    skipped = sorted(d for d in _SKIPPED_DIRS if (base / d).is_dir())
    ignored = _ignored(guard.root, base, [*counts, *skipped])
    least = "at least " if len(entries) > 50_000 else ""
    lines = [
        f"{shown} holds {least}{len(entries):,} files, too many to list one by one. Its "
        "folders first, with the files under each; list one of them to see its files:"
    ]
    for name in sorted(counts, key=lambda n: (n in ignored, n.startswith("."), n)):
        mark = " (ignored or generated)" if name in ignored else ""
        lines.append(f"{prefix}{name}/  {counts[name]:,} files{mark}")
    listed = [*lines, *(f"{prefix}{n}/  not listed (ignored)" for n in skipped)]
    lines = _fitting(listed, 2_400)
    lines += [f"[{len(listed) - len(lines)} more folders]"] if len(lines) < len(listed) else []
    here = _fitting(files, MAX_RESULT_CHARS - len("\n".join(lines)) - 300)
    lines.append(f"Files directly in {shown} ({len(files):,}): " + ", ".join(here))
    if len(here) < len(files):
        lines[-1] += f" [{len(files) - len(here)} more]"
    return "\n".join(lines)


def _ignored(root: Path, base: Path, names: list[str]) -> set[str]:
    """Which of `names` (folders in `base`) are build output or dependencies: a known name,
    or a plain pattern of the `.gitignore` at the workspace root or in `base`."""
    patterns: list[str] = []
    for ignore in dict.fromkeys([root / ".gitignore", base / ".gitignore"]):
        try:
            text = read_or_none(ignore, 1 << 20) or b""
        except (ToolError, FileTooLarge, OSError):  # a FIFO or a huge file: no patterns
            text = b""
        lines = text.decode("utf-8", "replace").splitlines()
        patterns += [p.strip().strip("/") for p in lines if p.strip()[:1] not in ("", "#", "!")]
    return {
        n for n in names
        if n in _GENERATED or n in _SKIPPED_DIRS or any(fnmatch.fnmatch(n, p) for p in patterns)
    }  # fmt: skip


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


def _load(guard: PathGuard, known: ConflictGuard, path: str) -> tuple[Path, str, str, str]:
    """The allowed file, how it is shown, its text on disk and a note on its decoding."""
    target = guard.resolve_read(path)
    shown = guard.display(target)
    if target.is_dir():
        raise ToolError(f"{shown} is a folder; use list_files to see what is in it.")
    try:
        data = read_or_none(target, MAX_READ_BYTES)
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
        return target, shown, data.decode("utf-8"), ""
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        return target, shown, text, "[not valid UTF-8: undecodable bytes are shown as \ufffd]\n"


def file_tools(
    guard: PathGuard,
    conflicts: ConflictGuard | None = None,
    timeout: float = 120.0,
    source: TextSource | None = None,
) -> list[Tool]:
    """list_files, read_file, write_file and edit_file, all behind `guard`, bounded by `timeout`;
    `read_file` shows what `source` has of a file, if it has it."""
    known = conflicts or ConflictGuard()

    def listing(path: str, recursive: bool) -> str:
        return _list(guard, guard.resolve_read(path), path, recursive)

    async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
        return await asyncio.to_thread(listing, args.get("path", "."), args.get("recursive", True))

    async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
        start, count = args.get("start_line"), args.get("max_lines")
        explicit = start is not None or count is not None
        target, shown, text, note = await asyncio.to_thread(_load, guard, known, args["path"])
        if source is not None:
            text, note = await _from_source(source, target, shown, text, note)
        return note + _page(text, shown, start or 1, count, explicit)

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


async def _from_source(
    source: TextSource, target: Path, shown: str, text: str, note: str
) -> tuple[str, str]:
    """The source's text of `target` when it differs from the disk's, with a note saying so."""
    given = await source(target)
    if given is None or given == text:
        return text, note
    if len(given.encode("utf-8")) > MAX_READ_BYTES:
        raise ToolError(f"{shown} as open in the editor is too large to read.")
    return given, (
        f"[{shown} as open in the editor, with changes not saved yet; edit_file, write_file "
        "and the commit work on the file as saved]\n"
    )


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
            "(sorted; .git, node_modules, .venv and caches skipped; at most 500, else a bigger "
            "folder is shown by its subfolders with the files under each, then its own files). "
            "Use it to find your way before reading. recursive=false lists only the folder's "
            "own entries "
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
