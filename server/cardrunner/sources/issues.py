"""GitHub issues as cards: one card per issue, with a `source:` link back, never twice.

An issue says what to change; its task list (`- [ ] …`) or its "Acceptance criteria" section says
how to know it works, so that becomes the card's criteria. The card links back with
`source: https://github.com/OWNER/REPO/issues/N`; that link is how an issue already imported is
recognised (however the card was renamed or edited since), and how the card's pull request
closes the issue (`board/prbody.py`). An issue without criteria is not imported: a card the runner
cannot judge would only fail.

An issue is a stranger's words, and the maintainer who labels it reads it rendered on GitHub,
where much of it cannot be seen: HTML comments, Unicode tag characters (invisible ASCII),
zero-width and bidi controls, a link whose text is not where it goes, the target of a
reference link. `visible_text` makes the card hold only what a reader sees — hidden content
removed (and counted), link and image targets written out, raw HTML escaped so it shows as
text, at most `MAX_TEXT` characters — and the card says whose words its description is: the
issue, its author and their `author_association`, and the time the text is from, above the
text as a quote (`Card.prompt` tells the model a quoted description is data).
"""

from __future__ import annotations

import html
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cardrunner.card.body import parse_body
from cardrunner.card.card import find_cards, readable_words
from cardrunner.card.record import unclosing
from cardrunner.card.text import find_front_matter, load_yaml, scalar

_TASK = re.compile(r"[ \t]{0,3}[-*+][ \t]+\[[ xX]\][ \t]+(\S.*)")
_ISSUE_LINK = re.compile(r"https?://[^/\s]+/([^/\s]+)/([^/\s]+)/issues/(\d+)")

MAX_TEXT = 20_000
"""The most characters of an issue's text a card keeps; the rest is cut, and the card says so."""
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)  # an unclosed one hides all the rest
_ENTITY = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
_TARGET = r"\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]" + _TARGET)
_LINK = re.compile(r"\[([^\[\]\n]*)\]" + _TARGET)
_DEFINITION = re.compile(r"(?m)^ {0,3}\[([^\[\]\n]+)\]:[ \t]*<?(\S*?)>?(?:[ \t]+.*)?$")
_FOLD = re.compile(r"</?(?:details|summary)(?:\s[^<>]*)?>", re.IGNORECASE)
_RAW_HTML = re.compile(r"<(?=[A-Za-z/!?])")
"""Where raw HTML (a tag, a declaration, CDATA, an autolink) would start: escaped, so shown."""


@dataclass(frozen=True)
class Visible:
    """A stranger's text as a reader sees it, and what was taken out of it."""

    text: str
    comments: int = 0
    hidden: int = 0
    """Invisible characters removed: tag, zero-width, bidi and other format or control ones."""
    cut: int = 0
    """Characters beyond `MAX_TEXT`, not kept."""

    def notes(self) -> str:
        """What was done to the text, as one sentence ("" when nothing was)."""
        done = [f"{self.comments} HTML comment(s)"] if self.comments else []
        done += [f"{self.hidden} invisible character(s)"] if self.hidden else []
        said = f"cardrunner removed {' and '.join(done)} from it." if done else ""
        if self.cut:
            said += f" It was cut after {MAX_TEXT:,} characters ({self.cut:,} more not kept)."
        return said.strip()


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in ("Cf", "Cc", "Co", "Cs") and char not in "\n\t"


def visible_text(text: str, limit: int = MAX_TEXT) -> Visible:
    """`text` with only what a reader of the rendered Markdown sees: no HTML comment, no
    invisible character (also none written as an entity), every link's and image's target
    shown next to its text, raw HTML escaped (`<details>` unfolded), at most `limit` chars."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    hidden = sum(map(_invisible, text))  # first: `<!\u200b--` is a comment once they go
    text = "".join(c for c in text if not _invisible(c))
    entities = [m for m in _ENTITY.findall(text) if all(map(_invisible, html.unescape(m)))]
    for entity in set(entities):
        text = text.replace(entity, "")
    comments = len(_COMMENT.findall(text))
    text = _COMMENT.sub("", text)
    text = _IMAGE.sub(lambda m: f"{m.group(1)} (image: {m.group(2)})".lstrip(), text)
    text = _LINK.sub(lambda m: _shown_link(m.group(1), m.group(2)), text)
    text = _DEFINITION.sub(lambda m: f"{m.group(1)}: {m.group(2)}", text)
    text = text.replace("](", "]\\(")  # a link the patterns missed shows, it does not link
    text = _RAW_HTML.sub(r"\\<", _FOLD.sub("\n", text))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    cut = max(len(text) - limit, 0)
    return Visible(text[:limit], comments, hidden + len(entities), cut)


def _shown_link(label: str, target: str) -> str:
    if not target or label.strip() == target:
        return label or target
    return f"{label} ({target})" if label.strip() else target


@dataclass(frozen=True)
class Imported:
    """What one import did: cards written, issues already imported, issues left out (why)."""

    written: list[Path]
    known: list[int]
    skipped: list[tuple[int, str]]
    cleaned: list[tuple[int, str]] = field(default_factory=list)
    """Issues whose text had hidden content, and what was removed (`Visible.notes`)."""


def issue_number(source: str | None) -> int | None:
    """The issue a card's `source:` links to, or None."""
    found = _ISSUE_LINK.fullmatch(source.strip()) if source else None
    return int(found.group(3)) if found else None


def card_text(issue: dict[str, Any]) -> str | None:
    """The card for an issue, or None when the issue has no criteria to judge it by: the
    issue's visible text, quoted under whose words it is and when they were read."""
    seen = visible_text(str(issue.get("body") or ""))
    body = with_criteria(seen.text)
    if body is None:
        return None
    parsed = parse_body(body, 0)
    title = unclosing(" ".join(visible_text(str(issue.get("title", "")), 300).text.split()), False)
    quoted = "\n".join(f"> {line}".rstrip() for line in parsed.description.splitlines())
    criteria = "".join(f"- {' '.join(c.split())}\n" for c in parsed.criteria)
    return (
        card_head(title, str(issue["html_url"]))
        + f"{attribution(issue, seen)}\n\n"
        + (f"{quoted}\n\n" if quoted else "")
        + f"## Acceptance criteria\n\n{criteria}"
    )


def attribution(issue: dict[str, Any], seen: Visible) -> str:
    """Whose words a card's description is: the issue, its author, their standing in the
    repository, and when the text was read (an edit after that is not in the card)."""
    user = issue.get("user") if isinstance(issue.get("user"), dict) else {}
    login = re.sub(r"[^A-Za-z0-9-]", "", str((user or {}).get("login") or "")) or "unknown"
    association = re.sub(r"[^A-Z_]", "", str(issue.get("author_association") or "").upper())
    when = re.sub(r"[^0-9A-Za-z:+.-]", "", str(issue.get("updated_at") or "")) or "an unknown time"
    line = (
        f"Issue #{int(issue['number'])} by @{login} (author_association {association or 'unknown'}),"
        f" as it was on {when}: the author's words, quoted as data."
    )
    return f"{line} {seen.notes()}".rstrip()


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
        if notes := visible_text(str(issue.get("body") or "")).notes():
            result.cleaned.append((number, notes))
    return result


def free_path(folder: Path, stem: str) -> Path:
    """`folder/<stem>.md`, or `<stem>-2.md` … when a file (or a link) has that name."""
    path, n = folder / f"{stem[:60]}.md", 2
    while os.path.lexists(path):
        path, n = folder / f"{stem[:60]}-{n}.md", n + 1
    return path
