"""What an MCP server says, as the model reads it: a result as plain text, a changed tool list.

A `CallToolResult` becomes the plain text every other tool gives the model. The model reads text
best as text: text blocks are passed through as they are (a JSON-escaped `"a\nb"` would cost
tokens and hide the layout). Structured content is shown as compact JSON only when the server
sent no text, because servers that send both put the same data in the text. Binary content
never goes into the conversation as base64 text: images and audio are saved under
`run_dir/mcp/` and referenced by path (images also travel as image content the model can see),
and so are embedded blobs. Resource links are listed as `name <uri>`. A browser's console
entries, which Playwright MCP links as a file in the run's folder, are shown as the entries,
and its `browser_find` answers without the search words (they would be evidence made by asking).

When a server comes back with a different tool list, what changed is worded for the model. The
tools a run offers are fixed when it starts: `tools` is part of every thinking block's prefix,
so changing it mid-run invalidates the model's reasoning (a 400 on the preserved-thinking
models). When a restarted server lists different tools, the run keeps `tools` as it was and says
what changed in a message at the end of the conversation, the way the API's docs prescribe.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardrunner.agent.toolpool import Image, ToolResult

if TYPE_CHECKING:
    import mcp_types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from cardrunner.agent.toolpool import Tool

if TYPE_CHECKING:
    import mcp_types


MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image media types the Messages API accepts as image content."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_CONSOLE_LINK = re.compile(r"^- New console entries: (\S+\.log)#L(\d+)$", re.MULTILINE)
_LOG_NAME = re.compile(r"[\w.-]+\.log")
_ENTRY_TIME = re.compile(r"^\[\s*\d+ms\] ")
_ENTRIES = 10
_ENTRY_CHARS = 300


class ResultConverter:
    """Converts results for one run; owns the numbering of the files it saves."""

    def __init__(self, run_dir: Path, root: Path) -> None:
        self._run_dir = run_dir
        self._folder = run_dir / "mcp"
        self._root = root
        self._seq = count(1)

    def convert(
        self, server: str, tool: str, result: mcp_types.CallToolResult,
        arguments: dict[str, Any] | None = None,
    ) -> ToolResult:  # fmt: skip
        """The text, images and error flag the model should see for `result` of the call with
        these `arguments`."""
        import mcp_types as types

        parts: list[str] = []
        images: list[Image] = []
        has_text = False
        for block in result.content:
            if isinstance(block, types.TextContent):
                has_text = True
                parts.append(self._inline_console(_unechoed(tool, block.text, arguments)))
            elif isinstance(block, types.ImageContent):
                where = self._save(server, tool, block.data, block.mime_type)
                parts.append(f"[image {block.mime_type}: {where}]")
                if block.mime_type in MODEL_IMAGE_TYPES and _is_base64(block.data):
                    images.append(Image(media_type=block.mime_type, data=block.data))
            elif isinstance(block, types.AudioContent):
                where = self._save(server, tool, block.data, block.mime_type)
                parts.append(f"[audio {block.mime_type}: {where}]")
            elif isinstance(block, types.ResourceLink):
                parts.append(_link(block))
            elif isinstance(block, types.EmbeddedResource):
                parts.append(self._embedded(server, tool, block.resource))
            else:  # a content type newer than this code: show what it is, not nothing
                parts.append(f"[{getattr(block, 'type', type(block).__name__)} content not shown]")
        if not has_text and result.structured_content is not None:
            parts.insert(0, _compact(result.structured_content))
        text = "\n".join(parts)
        if result.is_error:
            text = reason_first(text)
        if not text:
            text = (
                "(the tool reported an error without a message)"
                if result.is_error
                else "(no output)"
            )
        return ToolResult(text=text, is_error=bool(result.is_error), images=images)

    def _inline_console(self, text: str) -> str:
        """Playwright MCP's `- New console entries: <file>#L<n>` as the entries themselves.

        The file is in the run's folder (`--output-dir`), where the model's tools may not read;
        the link alone would cost a call to `browser_console_messages` (and that tool's
        definition in every request) to learn what went wrong. A link to anything outside the
        run's folder stays as it is."""

        def one(match: re.Match[str]) -> str:
            name = Path(match.group(1)).name
            if not _LOG_NAME.fullmatch(name):
                return match.group(0)
            found = [p for p in self._run_dir.rglob(name) if p.is_file()]
            try:
                lines = found[0].read_text("utf-8", "replace").splitlines() if found else []
            except OSError:
                lines = []
            lines = [_ENTRY_TIME.sub("", line) for line in lines[int(match.group(2)) - 1 :]]
            if not lines:
                return match.group(0)
            shown = [f"- {line[:_ENTRY_CHARS]}" for line in lines[:_ENTRIES]]
            more = len(lines) - len(shown)
            return "- New console entries:\n" + "\n".join(
                shown + ([f"- ({more} more)"] if more else [])
            )

        return _CONSOLE_LINK.sub(one, text)

    def _embedded(self, server: str, tool: str, resource: Any) -> str:
        import mcp_types as types

        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        if isinstance(resource, types.BlobResourceContents):
            media_type = resource.mime_type or "application/octet-stream"
            where = self._save(server, tool, resource.blob, media_type, hint=str(resource.uri))
            return f"[resource {resource.uri} ({media_type}) saved to {where}]"
        return f"[resource {getattr(resource, 'uri', '?')} not shown]"

    def _save(self, server: str, tool: str, data: str, media_type: str, hint: str = "") -> str:
        """Write base64 `data` to a new file; return the path to show (relative to root if inside)."""
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return "(not saved: the server sent invalid base64)"
        suffix = Path(hint).suffix if hint and Path(hint).suffix else _suffix(media_type)
        name = f"{next(self._seq):03d}-{_UNSAFE.sub('_', server)}-{_UNSAFE.sub('_', tool)}{suffix}"
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            path = self._folder / name
            path.write_bytes(raw)
        except OSError as exc:
            return f"(not saved: {exc.strerror or exc})"
        try:
            return str(path.resolve().relative_to(self._root.resolve()))
        except ValueError:
            return str(path.resolve())


def _unechoed(tool: str, text: str, arguments: dict[str, Any] | None) -> str:
    """Playwright MCP's `browser_find` without the words it was asked for.

    Its answer starts `Found 2 matches for "No posts yet.":` — or `No matches found for "No posts
    yet.".` on a page that does not show them. Left in, the search words would be a quote the
    call's own result contains whatever the page shows: evidence made by asking. Only what the
    page matched remains. A regex is echoed as JavaScript prints it (`/source/flags`, every `/`
    in the source escaped), so its end is the first unescaped `/`."""
    query = (arguments or {}).get("text") if tool == "browser_find" else None
    regex = (arguments or {}).get("regex") if tool == "browser_find" else None
    if not isinstance(query, str) and not isinstance(regex, str):
        return text
    asked = re.escape(f'"{query}"') if isinstance(query, str) else r"/(?:\\.|[^/\\])*/[a-z]*"
    text = re.sub(
        rf"No matches found for {asked}\.", "No matches found.", text, count=1, flags=re.S
    )
    return re.sub(rf"(Found \d+ match(?:es)?) for {asked}", r"\1", text, count=1, flags=re.S)


def _suffix(media_type: str) -> str:
    known = {"image/png": ".png", "image/jpeg": ".jpg", "audio/wav": ".wav", "audio/mpeg": ".mp3"}
    return known.get(media_type) or mimetypes.guess_extension(media_type) or ".bin"


def _link(block: mcp_types.ResourceLink) -> str:
    line = f"{block.name} <{block.uri}>"
    if block.description:
        line += f" — {block.description}"
    return line


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_ERROR_HEADING = re.compile(r"\A\s*#{1,6}\s*errors?\s*:?\s*\n+", re.IGNORECASE)


def reason_first(text: str) -> str:
    """A failed call's text with its reason on the first line, where every summary looks
    (the live view, the log's account, the editor): Playwright MCP answers `### Error` and
    gives the reason on the next line."""
    rest = _ERROR_HEADING.sub("", text, count=1)
    if rest == text or not rest.strip():
        return text
    return rest if rest.lower().startswith("error") else f"Error: {rest}"


def describe(exc: BaseException) -> str:
    """A one-line account of an exception, looking inside exception groups (anyio wraps in them)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions[:3])
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Offered(Tool, Protocol):
    """A tool as the run offers it (the hub's `McpTool`): a `Tool` with the server's name."""

    @property
    def remote_name(self) -> str: ...


def _shape(description: str, schema: dict[str, Any]) -> str:
    return json.dumps([description, {"type": "object", **schema}], sort_keys=True)


def tool_change(server: str, offered: Iterable[Offered], listed: Iterable[mcp_types.Tool]) -> str:
    """One message naming what the server dropped, added and changed; "" if nothing did."""
    before = {t.remote_name: _shape(t.description, t.input_schema) for t in offered}
    after = {
        t.name: _shape(t.description or t.title or before.get(t.name, ""), t.input_schema)
        for t in listed
    }
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    if not (gone or new or changed):
        return ""
    parts = [f"MCP server '{server}' came back with a different tool list."]
    if gone:
        parts.append(f"No longer available (calls fail): {', '.join(gone)}.")
    if changed:
        parts.append(f"Changed on the server (its arguments may differ): {', '.join(changed)}.")
    if new:
        parts.append(
            f"New on the server but not offered in this run (the tool list is fixed for the "
            f"whole run): {', '.join(new)}."
        )
    return " ".join(parts)
