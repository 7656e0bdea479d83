"""What a prompt asks for (run, resume or list cards, draft one, or nothing we do), and the draft.

A session is a card. The agent advertises `/run CARD`, `/resume CARD`, `/cards` and `/save`; a
prompt that links a card file (a `resource_link` or an embedded `resource` with a `file://` URI,
what a client sends for an @-mention) or names one (`cards/fix-add.md`, `fix-add.md`, `fix-add`)
runs it — unless it has two or more lines: with a card open (mentioned, or the session's own)
such a prompt describes a new card, which is drafted and saved on `/save`. Anything else is
answered with the list of cards and how to run one. Which card a session ran is kept under
`.cardrunner/` so `session/load` in a later process knows what to resume.

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    AvailableCommand,
    AvailableCommandInput,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    UnstructuredCommandInput,
)

from cardrunner.card.card import find_cards
from cardrunner.config.paths import StatePaths

Block = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

COMMANDS = [
    AvailableCommand(
        name="run",
        description="Run a card: the agent works it to Done, you review before it commits",
        input=AvailableCommandInput(UnstructuredCommandInput(hint="cards/CARD.md")),
    ),
    AvailableCommand(
        name="resume",
        description="Continue the card's last unfinished run from its log",
        input=AvailableCommandInput(UnstructuredCommandInput(hint="cards/CARD.md")),
    ),
    AvailableCommand(name="cards", description="List the cards of this repository"),
    AvailableCommand(name="save", description="Write the card drafted last into the cards folder"),
]


@dataclass(frozen=True)
class Ask:
    """What one prompt asks for; `card` is set for run and resume."""

    what: Literal["run", "resume", "cards", "draft", "save", "other"]
    card: Path | None = None
    text: str = ""


def prompt_text(blocks: Sequence[Block]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, TextContentBlock)).strip()


def prompt_lines(blocks: Sequence[Block]) -> list[str]:
    """The prompt's non-empty lines; text blocks around a mention belong to one line."""
    text = " ".join(b.text for b in blocks if isinstance(b, TextContentBlock))
    return [line for line in text.splitlines() if line.strip()]


def described(root: Path, folder: str, blocks: Sequence[Block]) -> list[str]:
    """The prompt's lines without the mentions of a card typed as text (`@cards/x.md`,
    `cards/x.md`): what describes the new card, not the card that is open."""

    def mention(word: str) -> bool:
        typed = word.startswith("@") or word.endswith(".md")
        return typed and find_card(root, folder, word) is not None

    return [" ".join(w for w in line.split() if not mention(w)) for line in prompt_lines(blocks)]


def _linked(blocks: Sequence[Block]) -> list[str]:
    uris = [b.uri for b in blocks if isinstance(b, ResourceContentBlock)]
    uris += [b.resource.uri for b in blocks if isinstance(b, EmbeddedResourceContentBlock)]
    return [unquote(urlparse(u).path) if u.startswith("file:") else u for u in uris]


def find_card(root: Path, folder: str, name: str) -> Path | None:
    """The card `name` stands for: a path (absolute or from the root), a file name or a stem."""
    name = name.strip().strip("`'\"").removeprefix("@")
    if not name:
        return None
    cards = find_cards(root, folder)
    path = Path(name) if Path(name).is_absolute() else root / name
    resolved = {c.resolve(): c for c in cards}
    if path.resolve() in resolved:
        return resolved[path.resolve()]
    named = [c for c in cards if name in (c.name, c.stem)]
    return named[0] if len(named) == 1 else None


_COMMAND = re.compile(r"^/(run|resume|cards|save)\b\s*(.*)$", re.S)


def read_prompt(
    root: Path, folder: str, blocks: Sequence[Block], open_card: Path | None = None
) -> Ask:
    """The prompt's command; else a draft (several lines, a card open); else the card it links
    or names; else `other`. `open_card` is the session's card, if it has one."""
    text = prompt_text(blocks)
    links = [c for u in _linked(blocks) if (c := find_card(root, folder, u)) is not None]
    command = _COMMAND.match(text)
    if command:
        verb, rest = command.group(1), command.group(2).strip()
        if verb in ("cards", "save"):
            return Ask("cards" if verb == "cards" else "save", text=text)
        card = links[0] if links else find_card(root, folder, rest.split()[0] if rest else "")
        return Ask("run" if verb == "run" else "resume", card, text) if card else Ask("other")
    named = [c for word in text.split() if (c := find_card(root, folder, word)) is not None]
    mentioned = next(iter(links or named), None)
    if len(prompt_lines(blocks)) >= 2 and (mentioned or open_card):
        return Ask("draft", mentioned or open_card, text)
    return Ask("run", mentioned, text) if mentioned else Ask("other", text=text)


def cards_text(root: Path, folder: str) -> str:
    """The cards and how to run one (the answer to `/cards` and to anything else)."""
    cards = find_cards(root, folder)
    if not cards:
        return (
            f"There are no cards in {folder}/ of {root}. Write one (docs/cards.md), then `/run` it."
        )
    listed = "\n".join(f"- `{c.relative_to(root).as_posix()}`" for c in cards)
    return (
        f"The cards of {root.name}:\n{listed}\n\n"
        "Run one with `/run cards/NAME.md` (or mention its file), continue an unfinished run "
        "with `/resume cards/NAME.md`."
    )


def remember(root: Path, session_id: str, card: Path) -> None:
    """Record which card the session runs (`session/load` reads it)."""
    path = StatePaths(root).ensure().agent_session(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"card": card.relative_to(root).as_posix()}), encoding="utf-8")


def remembered(root: Path, session_id: str) -> Path | None:
    """The card a session ran, None for a session this workspace never saw."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,80}", session_id):
        return None  # a session id is a file name here: nothing that could walk out
    try:
        data = json.loads(StatePaths(root).agent_session(session_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    card = root / str(data.get("card", "")) if isinstance(data, dict) else None
    return card if card is not None and card.is_file() else None


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
