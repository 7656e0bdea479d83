"""Keep API secrets out of everything we write down: logs, tool output, diffs, error messages.

A key can end up in text in many ways (a test prints the environment, an exception repeats a
header). Rather than trusting every path, front ends pass text through `redact` before storing or
showing it.
"""

from __future__ import annotations

import os
import re

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
REDACTED = "[redacted]"
_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]+")


def redact(text: str) -> str:
    """`text` with the current secret values and anything shaped like `sk-ant-…` replaced."""
    for name in SECRET_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if len(value) >= 8:
            text = text.replace(value, REDACTED)
    return _KEY_SHAPE.sub(REDACTED, text)
