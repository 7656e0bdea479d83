"""What changed in a server's tool list when it came back, worded for the model.

The tools a run offers are fixed when it starts: `tools` is part of every thinking block's prefix,
so changing it mid-run invalidates the model's reasoning (a 400 on the preserved-thinking
models). When a restarted server lists different tools, the run keeps `tools` as it was and says
what changed in a message at the end of the conversation, the way the API's docs prescribe.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from cardrunner.agent.gate import Tool

if TYPE_CHECKING:
    import mcp_types


class Offered(Tool, Protocol):
    """A tool as the run offers it (the hub's `McpTool`): a `Tool` with the server's name."""

    @property
    def remote_name(self) -> str: ...


def _shape(description: str, schema: dict[str, Any]) -> str:
    return json.dumps([description, {"type": "object", **schema}], sort_keys=True)


def tool_change(server: str, offered: Iterable[Offered], listed: Iterable[mcp_types.Tool]) -> str:
    """One message naming what the server dropped, added and changed; "" if nothing did."""
    before = {t.remote_name: _shape(t.description, t.input_schema) for t in offered}
    after = {
        t.name: _shape(t.description or t.title or before.get(t.name, ""), t.input_schema)
        for t in listed
    }
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    if not (gone or new or changed):
        return ""
    parts = [f"MCP server '{server}' came back with a different tool list."]
    if gone:
        parts.append(f"No longer available (calls fail): {', '.join(gone)}.")
    if changed:
        parts.append(f"Changed on the server (its arguments may differ): {', '.join(changed)}.")
    if new:
        parts.append(
            f"New on the server but not offered in this run (the tool list is fixed for the "
            f"whole run): {', '.join(new)}."
        )
    return " ".join(parts)
