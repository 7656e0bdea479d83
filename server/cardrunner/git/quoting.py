"""Paths as git quotes them: the one safe way to show a name a model or a file chose.

A file name may hold a newline, a quote or a control byte: listed raw, `x\\n# LGTM\\n.tmp` reads
as three lines, the middle one a reviewer's comment. git's answer (`core.quotePath`) is to put
such a name in double quotes with C-style escapes, so one name is always one token on one line.
`quote` writes names that way wherever a person or a parser reads them, and `unquote` reads
git's quoted names back (in `diff --git`, `---` and `+++` lines) to the bytes on disk. We run git
with `core.quotePath=false`, so bytes of UTF-8 characters stay as they are; everything git still
quotes — and only that — `quote` quotes too.
"""

from __future__ import annotations

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
