"""The one function text goes through before a terminal or an editor shows it.

Model text, tool output and file contents are not ours. An erase-line (`\\x1b[2K`) or a carriage
return can hide a line of a diff behind a harmless-looking one; a bidi override reorders what a
reviewer reads. So every control character except newline and tab is shown as its escape
(`\\x1b[2K`, `\\r`, `\\u202e`), and secrets are redacted, in this one place: `shown`. The run log
keeps the raw text (JSON escapes it, and a resume needs it byte for byte).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypeVar

from cardrunner.config.secrets import redact

if TYPE_CHECKING:  # a bound only: the git layer shows text without loading pydantic
    from pydantic import BaseModel

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""C0 and C1 controls but \\t and \\n, DEL, line separators and every bidi control."""

M = TypeVar("M", bound="BaseModel")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {0x0D: "\\r", 0x1B: "\\x1b"}.get(code) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )


def visible(text: str) -> str:
    """`text` with every control character written out; a CRLF line end is just a line end."""
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def shown(text: str) -> str:
    """What a terminal or an editor may show of `text`: redacted, controls made visible."""
    return visible(redact(text))


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(v) for v in value)
    return value


def shown_model(model: M) -> M:
    """A copy of `model` (an event) with every string in it passed through `shown`."""
    return type(model).model_validate(_clean(model.model_dump()))
