"""GitHub issues as cards: one card per issue, with a `source:` link back, never twice.

An issue says what to change; its task list (`- [ ] …`) or its "Acceptance criteria" section says
how to know it works, so that becomes the card's criteria. The card links back with
`source: https://github.com/OWNER/REPO/issues/N`; that link is how an issue already imported is
recognised (however the card was renamed or edited since), and how the card's pull request
closes the issue (`board/prbody.py`). An issue without criteria is not imported: a card the runner
cannot judge would only fail.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cardrunner.card.body import parse_body
from cardrunner.card.card import find_cards, readable_words
from cardrunner.card.text import find_front_matter, load_yaml, scalar

_TASK = re.compile(r"[ \t]{0,3}[-*+][ \t]+\[[ xX]\][ \t]+(\S.*)")
_ISSUE_LINK = re.compile(r"https?://[^/\s]+/([^/\s]+)/([^/\s]+)/issues/(\d+)")


@dataclass(frozen=True)
class Imported:
    """What one import did: cards written, issues already imported, issues left out (why)."""

    written: list[Path]
    known: list[int]
    skipped: list[tuple[int, str]]


def issue_number(source: str | None) -> int | None:
    """The issue a card's `source:` links to, or None."""
    found = _ISSUE_LINK.fullmatch(source.strip()) if source else None
    return int(found.group(3)) if found else None


def card_text(issue: dict[str, Any]) -> str | None:
    """The card for an issue, or None when the issue has no criteria to judge it by."""
    body = with_criteria(str(issue.get("body") or ""))
    if body is None:
        return None
    return card_head(str(issue.get("title", "")), str(issue["html_url"])) + body


def card_head(title: str, source: str, state: str = "New", reason: str | None = None) -> str:
    """A new card's front matter: its title, state, `source:` link (and a reason)."""
    head = f"---\ntitle: {scalar(title.strip())}\nstate: {state}\n"
    head += f"reason: {scalar(reason)}\n" if reason else ""
    return head + f"source: {scalar(source)}\n---\n"


def with_criteria(text: str) -> str | None:
    """A tracker's text as a card's body: kept when it has an "Acceptance criteria" section,
    else its task list (`- [ ] …`) moved under one; None when it has neither."""
    body = text.replace("\r\n", "\n").strip()
    if parse_body(f"{body}\n", 0).criteria and _has_criteria_heading(body):
        return f"{body}\n"
    lines = body.splitlines()
    tasks = [m.group(1).strip() for line in lines if (m := _TASK.fullmatch(line))]
    if not tasks:
        return None
    rest = "\n".join(line for line in lines if not _TASK.fullmatch(line)).strip()
    criteria = "".join(f"- {' '.join(task.split())}\n" for task in tasks)
    return f"{rest}\n\n## Acceptance criteria\n\n{criteria}".replace("\n\n\n", "\n\n").lstrip("\n")


def _has_criteria_heading(body: str) -> bool:
    return any(
        re.sub(r"[#*_:`]", " ", line).split() == ["acceptance", "criteria"]
        for line in body.lower().splitlines()
    )


def imported_sources(folder: Path) -> set[str]:
    """The `source:` links of the cards under `folder` (read from the front matter only)."""
    found: set[str] = set()
    for path in find_cards(folder, "."):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        front = find_front_matter(text)
        if isinstance(front, str):
            continue
        try:
            data = load_yaml(front.yaml_text(text), str(path))  # bounded: a repository's
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("source"), str):
            found.add(data["source"].strip())
    return found


def import_issues(issues: list[dict[str, Any]], folder: Path) -> Imported:
    """Write a card into `folder` for each issue not imported before (pull requests, which the
    issues API lists too, are left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    known_sources = imported_sources(folder)
    result = Imported([], [], [])
    for issue in issues:
        number = int(issue["number"])
        if "pull_request" in issue:
            continue
        if str(issue["html_url"]) in known_sources:
            result.known.append(number)
            continue
        text = card_text(issue)
        if text is None:
            result.skipped.append((number, "no task list or acceptance criteria"))
            continue
        path = free_path(folder, f"{number}-{readable_words(str(issue.get('title')))}")
        with path.open("x", encoding="utf-8") as file:  # never through a planted symlink
            file.write(text)
        known_sources.add(str(issue["html_url"]))
        result.written.append(path)
    return result


def free_path(folder: Path, stem: str) -> Path:
    """`folder/<stem>.md`, or `<stem>-2.md` … when a file (or a link) has that name."""
    path, n = folder / f"{stem[:60]}.md", 2
    while os.path.lexists(path):
        path, n = folder / f"{stem[:60]}-{n}.md", n + 1
    return path
