"""Scripted edits: a transcript's `write_file` may say *what to change* instead of the whole file.

A real model reads a file, then writes its complete new content. A transcript cannot know the
content in advance when earlier cards changed the file, so a step may give
`{"path": P, "edit": [[old, new], ...]}`: the scripted model takes the text of P from the
`read_file` results already in the conversation (stitching paged reads), applies the
replacements and sends the whole file — exactly what a model would have done with what it read.
If the file was not read, or an `old` text is not in it, the edit cannot be made honestly.
"""

from __future__ import annotations

import re
from typing import Any

_PAGE = re.compile(r"^\[(?P<path>.+?): lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\]\n")
_TAIL = re.compile(r"\n\[call read_file with start_line=\d+ to read on\]$")


class EditError(ValueError):
    """The scripted edit cannot be made from what the conversation shows."""


def _reads(messages: list[dict[str, Any]], path: str) -> list[str]:
    """Results of `read_file(path)` calls in the conversation, oldest first."""
    wanted: set[str] = set()
    out: list[str] = []
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use" and block.get("name") == "read_file":
                if block.get("input", {}).get("path") == path:
                    wanted.add(block["id"])
            elif (
                block.get("type") == "tool_result"
                and block.get("tool_use_id") in wanted
                and not block.get("is_error")
                and isinstance(block.get("content"), str)
            ):
                out.append(block["content"])
    return out


def file_text(messages: list[dict[str, Any]], path: str) -> str:
    """The newest full text of `path` the conversation has seen."""
    pages: dict[int, list[str]] = {}
    total = None
    for text in _reads(messages, path):
        page = _PAGE.match(text)
        if page is None:  # the whole file in one read
            pages = {i + 1: [line] for i, line in enumerate(text.splitlines(keepends=True))}
            total = len(pages)
            continue
        body = _TAIL.sub("", text[page.end() :])
        first, total = int(page["a"]), int(page["n"])
        for i, line in enumerate(body.splitlines(keepends=True)):
            pages[first + i] = [line]
    if total is None:
        raise EditError(f"{path} was never read in this conversation")
    missing = [i for i in range(1, total + 1) if i not in pages]
    if missing:
        raise EditError(f"lines {missing[0]}.. of {path} were never read")
    return "".join(pages[i][0] for i in range(1, total + 1))


def apply_edit(messages: list[dict[str, Any]], path: str, edits: list[list[str]]) -> str:
    """The whole new content of `path`: what was read, with each [old, new] replaced once."""
    text = file_text(messages, path)
    for old, new in edits:
        if text.count(old) != 1:
            found = "not found" if old not in text else "found more than once"
            raise EditError(f"the text to change in {path} was {found}: {old.strip()[:60]!r}")
        text = text.replace(old, new)
    return text
