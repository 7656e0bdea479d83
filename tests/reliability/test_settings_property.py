"""Thousands of generated settings files: every one gives settings and clear problems, never a crash."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardrunner.config.loading import load_settings
from cardrunner.config.settings import Settings

KEYS = [
    "model",
    "cards",
    "limits",
    "paths",
    "commands",
    "mcp",
    "prices",
    "options",
    "require_evidence",
    "isolation",
    "max_rounds",
    "max_tokens",
    "max_cost_usd",
    "read",
    "write",
    "build",
    "command",
    "url",
    "args",
    "env",
    "input",
    "output",
    "cache_read",
    "cache_write",
    "replay",
    "x",
    "ü",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=12,
)


def toml_value(value: Any) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


documents = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=6).map(
        lambda d: "\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in d.items())
    ),
    st.text(max_size=200),
)
FOLDER = Path(tempfile.mkdtemp(prefix="settings-property-"))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(toml=documents, mcp_json=st.one_of(st.none(), st.text(max_size=80), values.map(json.dumps)))
def test_any_settings_file_gives_settings_and_clear_problems(
    toml: str, mcp_json: str | None
) -> None:
    (FOLDER / "cardrunner.toml").write_text(toml, encoding="utf-8")
    mcp = FOLDER / ".mcp.json"
    if mcp_json is None:
        mcp.unlink(missing_ok=True)
    else:
        mcp.write_text(mcp_json, encoding="utf-8")
    result, problems = load_settings(FOLDER)
    assert isinstance(result, Settings)
    for problem in problems:
        assert problem.file and problem.message
        assert str(problem).startswith(problem.file)
