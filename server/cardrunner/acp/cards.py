"""What a prompt asks for: run a card, resume one, list the cards, draft one, or nothing we do.

A session is a card. The agent advertises `/run CARD`, `/resume CARD`, `/cards` and `/save`; a
prompt that links a card file (a `resource_link` or an embedded `resource` with a `file://` URI,
what a client sends for an @-mention) or names one (`cards/fix-add.md`, `fix-add.md`, `fix-add`)
runs it — unless it has two or more lines: with a card open (mentioned, or the session's own)
such a prompt describes a new card, which is drafted (acp/draft.py) and saved on `/save`.
Anything else is answered with the list of cards and how to run one. Which card a session ran is
kept under `.cardrunner/` so `session/load` in a later process knows what to resume.
"""

from __future__ import annotations

import json
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
