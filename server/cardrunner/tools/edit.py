"""`edit_file`: exact replacements in a file, so a large file needs no full rewrite.

Writing a whole 2,000-line file to change three lines costs the output of 2,000 lines — and on
a long file can hit `max_tokens` in the middle of the call. An edit names the exact old text
and its replacement; each old text must occur exactly once (in the file as the earlier edits of
the same call left it), so an edit can never land in the wrong place. Either every edit applies
or none does. The current file on disk is what is edited, so a user's concurrent change
elsewhere in the file is kept.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from cardrunner.agent.gate import Tool, ToolContext, ToolError
from cardrunner.tools.base import FunctionTool
from cardrunner.tools.base import schema as make_schema
from cardrunner.tools.guard import ConflictGuard, PathGuard, read_or_none

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
