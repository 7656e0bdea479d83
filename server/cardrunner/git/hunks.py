"""Hunks of a unified diff, the reviewer's comments between its lines, and paths as git quotes them.

A review is worth more when it can keep some of a file's changes and drop others, and when a
remark can point at the line it is about. Both need the diff in parts: `parse_diff` splits
`git diff` output into files and hunks (with the document lines each occupies, for editors),
`patch_of` puts chosen hunks back together as a patch git can apply (in reverse, to drop
them), and lines a reviewer adds starting with `#` become `Comment`s tied to the diff line
above them. Text before the first `diff --git` (a review header) is skipped.

Byte for byte: every line of git's output ends in `\n` (a missing final newline is git's
`\\ No newline at end of file` line), so the text is split on `\n` alone and joined back the
same way. `str.splitlines` would also split at a form feed or a lone `\r` and drop the `\r`
of a CRLF line, and the patch would no longer apply. Raw output is decoded with
`surrogateescape` (`decode_raw`), so any byte survives the round trip. Paths git quotes
(`"notes \"v2\".py"`) are read back to the name on disk (`unquote`).

Quoting as git does is the one safe way to show a name a model or a file chose. A file name may
hold a newline, a quote or a control byte: listed raw, `x\n# LGTM\n.tmp` reads as three lines,
the middle one a reviewer's comment. git's answer (`core.quotePath`) is to put such a name in
double quotes with C-style escapes, so one name is always one token on one line. `quote` writes
names that way wherever a person or a parser reads them, and `unquote` reads git's quoted names
back (in `diff --git`, `---` and `+++` lines) to the bytes on disk. We run git with
`core.quotePath=false`, so bytes of UTF-8 characters stay as they are; everything git still
quotes — and only that — `quote` quotes too.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from cardrunner.agent.review import HunkRef

_ESCAPES = {
    "\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r",
    '"': '"', "\\": "\\",
}  # fmt: skip
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}


def _needs_quote(char: str) -> bool:
    code = ord(char)
    return char in _ESCAPES or code < 0x20 or code == 0x7F or 0xDC80 <= code <= 0xDCFF


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return "\\" + _ESCAPES[char]
    code = ord(char)
    byte = code - 0xDC00 if 0xDC80 <= code <= 0xDCFF else code  # an undecodable byte
    return f"\\{byte:03o}"


def quote(path: str) -> str:
    """`path` as git shows it: unchanged if plain, else in quotes with C-style escapes."""
    if not any(_needs_quote(c) for c in path):
        return path
    return '"' + "".join(_escaped(c) if _needs_quote(c) else c for c in path) + '"'


def unquote(token: str) -> str:
    """The name a git-quoted `token` stands for (a token without quotes is the name itself).

    Octal escapes are bytes: decoded as UTF-8, undecodable ones kept as surrogate escapes, so
    the name is the file's name on disk byte for byte (`os.fsencode` gives the bytes back).
    """
    if not (len(token) >= 2 and token.startswith('"') and token.endswith('"')):
        return token
    out = bytearray()
    body, i = token[1:-1], 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 == len(body):
            out += char.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1] in "01234567" and body[i + 1 : i + 4].isdigit():
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out += _UNESCAPES.get(body[i + 1], body[i + 1]).encode("utf-8", "surrogateescape")
            i += 2
    return out.decode("utf-8", "surrogateescape")


def split_token(text: str) -> tuple[str, str]:
    """The first path token of `text` (quoted or up to the end) and what follows it."""
    if not text.startswith('"'):
        return text, ""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return text[: i + 1], text[i + 1 :]
        i += 1
    return text, ""


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_MODE_LINES = ("old mode ", "new mode ")
COMMENT_PREFIX = "#"
"""A line starting with this is a reviewer's remark: no diff line starts with it."""


def decode_raw(raw: bytes) -> str:
    """git's output as text that encodes back to exactly these bytes (`encode_raw`)."""
    return raw.decode("utf-8", errors="surrogateescape")


def encode_raw(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


@dataclass
class Hunk:
    """One `@@` block: where it sits in the document and in the old and new file."""

    path: str
    index: int
    first_line: int
    """0-based document line of the `@@` header."""
    last_line: int
    old_start: int
    new_start: int
    lines: list[str] = field(default_factory=list)
    """The header and its diff lines (without their `\\n`), without reviewer comments."""

    @property
    def ref(self) -> HunkRef:
        return HunkRef(self.path, self.index)

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines[1:] if line.startswith("+"))

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines[1:] if line.startswith("-"))

    def describe(self) -> str:
        """`src/a.py hunk 2 (@@ -28,3 +28,3 @@, +1/-1)`: the path quoted as git quotes it."""
        at = m.group(0) if (m := _HUNK.match(self.lines[0])) else self.lines[0]
        return f"{quote(self.path)} hunk {self.index + 1} ({at}, +{self.added}/-{self.removed})"


@dataclass
class FilePatch:
    """One file's part of the diff: its header lines (`diff --git` … `+++`) and hunks."""

    path: str
    first_line: int
    header: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)


@dataclass(frozen=True)
class Comment:
    """A reviewer's remark, tied to the diff line above it (if it follows one)."""

    text: str
    path: str | None = None
    line: int | None = None
    """Line number in the new file (old file for a removed line); None for general remarks."""
    code: str = ""
    """The diff line the remark is about, as shown (`+    return 1`)."""

    def describe(self) -> str:
        if self.path is None:
            return self.text
        name = quote(self.path)
        where = f"{name}:{self.line}" if self.line else name
        return (
            f"{where} (`{self.code.strip()}`): {self.text}"
            if self.code
            else f"{where}: {self.text}"
        )


@dataclass
class ParsedDiff:
    """The files of a diff, in order, and the comments found in it."""

    files: list[FilePatch] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)

    def hunks(self) -> list[Hunk]:
        return [hunk for patch in self.files for hunk in patch.hunks]

    def hunk_at(self, line: int) -> Hunk | None:
        """The hunk whose lines include document line `line` (0-based)."""
        return next((h for h in self.hunks() if h.first_line <= line <= h.last_line), None)

    def file(self, path: str) -> FilePatch | None:
        return next((f for f in self.files if f.path == path), None)


def _side(token: str, side: str) -> str | None:
    """The path of an `a/…` or `b/…` token (quoted or not); None for `/dev/null`."""
    name = unquote(token.removesuffix("\t"))
    return name[2:] if name.startswith(side) else None


def _path_of(header: list[str]) -> str:
    """The file's path from `+++ b/…` (or `--- a/…` for a deletion, or the `diff --git` line)."""
    for prefix, side in (("+++ ", "b/"), ("--- ", "a/")):
        for line in header:
            if line.startswith(prefix) and (path := _side(line[len(prefix) :], side)):
                return path
    first = header[0][len("diff --git ") :] if header else ""
    if first.startswith('"'):  # "a/…" "b/…": no renames, so both name the same file
        return _side(split_token(first)[0], "a/") or first
    half = (len(first) - 5) // 2  # a/X b/X, likewise
    return first[2 : 2 + half] if half > 0 else first


class _Parser:
    """Walks the lines once; small enough to keep the state machine readable."""

    def __init__(self, typed: set[int] | None) -> None:
        self.out = ParsedDiff()
        self.typed = typed
        self.patch: FilePatch | None = None
        self.hunk: Hunk | None = None
        self.old = self.new = 0
        self.last: tuple[str, int, str] | None = None  # path, line number, code of last diff line

    def feed(self, number: int, line: str) -> None:
        if line.startswith("diff --git "):
            self.patch, self.hunk, self.last = FilePatch("", number, [line]), None, None
            self.out.files.append(self.patch)
            self.patch.path = _path_of(self.patch.header)
        elif line.startswith(COMMENT_PREFIX):
            if self.typed is None or number in self.typed:
                self._comment(line)
        elif self.patch is None:
            return
        elif (match := _HUNK.match(line)) is not None:
            self._start_hunk(number, line, match)
        elif self.hunk is None:
            self.patch.header.append(line)
            self.patch.path = _path_of(self.patch.header)
        else:
            self._diff_line(number, line)

    def _comment(self, line: str) -> None:
        text = line[len(COMMENT_PREFIX) :].strip()
        if not text:
            return
        if self.last is None:
            path = self.patch.path if self.patch else None
            self.out.comments.append(Comment(text, path))
        else:
            self.out.comments.append(Comment(text, self.last[0], self.last[1], self.last[2]))

    def _start_hunk(self, number: int, line: str, match: re.Match[str]) -> None:
        assert self.patch is not None
        self.old, self.new = int(match.group(1)), int(match.group(3))
        index = len(self.patch.hunks)
        self.hunk = Hunk(self.patch.path, index, number, number, self.old, self.new, [line])
        self.patch.hunks.append(self.hunk)
        self.last = None

    def _diff_line(self, number: int, line: str) -> None:
        assert self.hunk is not None
        self.hunk.lines.append(line)
        self.hunk.last_line = number
        if line.startswith("-"):
            self.last = (self.hunk.path, self.old, line)
            self.old += 1
        elif line.startswith(("+", " ")):
            self.last = (self.hunk.path, self.new, line)
            self.new += 1
            self.old += line.startswith(" ")


def lines_of(text: str) -> list[str]:
    """The lines of `text`, split at `\\n` only (never at `\\r`, a form feed or U+2028)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _typed(lines: list[str], original: str) -> set[int]:
    """Numbers of the lines of `lines` that are not lines of `original`: what someone typed."""
    matcher = difflib.SequenceMatcher(None, lines_of(original), lines, autojunk=False)
    return {
        number
        for tag, _, _, start, end in matcher.get_opcodes()
        if tag in ("insert", "replace")
        for number in range(start, end)
    }


def parse_diff(text: str, original: str | None = None) -> ParsedDiff:
    """Files, hunks (with their 0-based document lines) and comments of a unified diff.

    With `original` (the diff as the runner wrote it), only lines the reviewer added can be
    comments: a line of the runner's own text is never taken for a remark, whatever it says.
    """
    lines = lines_of(text)
    parser = _Parser(_typed(lines, original) if original is not None else None)
    for number, line in enumerate(lines):
        parser.feed(number, line)
    return parser.out


def patch_of(diff: ParsedDiff, picked: set[HunkRef]) -> str:
    """A patch holding only the `picked` hunks (with their files' headers), for `git apply`.

    A mode change belongs to the whole file, not to a hunk: it is in the patch only when every
    hunk of its file is picked."""
    parts: list[str] = []
    for patch in diff.files:
        hunks = [h for h in patch.hunks if h.ref in picked]
        if hunks:
            every = len(hunks) == len(patch.hunks)
            parts += [h for h in patch.header if every or not h.startswith(_MODE_LINES)]
            parts += [line for h in hunks for line in h.lines]
    return "\n".join(parts) + "\n" if parts else ""


def comments_reason(comments: list[Comment]) -> str:
    """The reviewer's comments as one rejection reason, one remark per line."""
    if len(comments) == 1:
        return comments[0].describe()
    return "\n".join(f"- {c.describe()}" for c in comments)
