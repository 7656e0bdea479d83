"""A new card drafted from a prompt, for a session with a card open.

A prompt of two or more lines that is not a command, sent while a card is open (mentioned in
the prompt, or the card the session ran or loaded), describes work rather than asking to run
what exists: its first line is the new card's title, each further line one acceptance criterion
(list markers and checkboxes dropped). The draft is sent back as a message; nothing is written
until the user sends `/save`, which writes it as a new file under the cards folder and never
over an existing one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)]|#{1,6})?\s*(?:\[[ xX]\]\s*)?")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Draft:
    """A card not yet saved: its proposed file name and its Markdown."""

    name: str
    text: str

    def message(self, folder: str) -> str:
        return (
            f"A new card drafted from your message:\n\n```markdown\n{self.text}```\n\n"
            f"Send `/save` to write it as `{folder}/{self.name}`, or copy it where you like."
        )


def _clean(line: str) -> str:
    return _MARKER.sub("", line, count=1).strip()


def draft_card(lines: list[str]) -> Draft | None:
    """The card `lines` describe (title first, then criteria); None for fewer than two."""
    kept = [c for line in lines if (c := _clean(line))]
    if len(kept) < 2:
        return None
    title, criteria = kept[0], kept[1:]
    slug = _SLUG.sub("-", title.lower()).strip("-")[:50].strip("-") or "new-card"
    items = "".join(f"- {c}\n" for c in criteria)
    text = (
        f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\nstate: New\n---\n"
        f"{title}\n\n**Acceptance criteria**\n\n{items}"
    )
    return Draft(f"{slug}.md", text)


def save(root: Path, folder: str, draft: Draft) -> Path:
    """Write `draft` as a new file in `root/folder` (`name`, else `name-2`, …); never overwrite."""
    base = root / folder
    base.mkdir(parents=True, exist_ok=True)
    stem = draft.name.removesuffix(".md")
    for n in range(1, 1000):
        path = base / (draft.name if n == 1 else f"{stem}-{n}.md")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(draft.text)
        return path
    raise FileExistsError(f"{base} already has {stem}.md and 998 numbered copies")
