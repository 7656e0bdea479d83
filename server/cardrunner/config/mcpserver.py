"""One MCP server's settings, and where they came from.

Kept apart from the rest of the settings because where a server was configured decides what it
may be given: a `${VAR}` of a secret-looking name is filled only for a server the user's own
config names (`USER_SOURCE`), never for one a repository wrote (tools/mcp/hub.py, docs/security.md).
A server an ACP client passed in (`CLIENT_SOURCE`) comes with its values already filled by the
client: they are taken literally, and cardrunner fills nothing of its own environment into them.
`source` is set by the loader (config/sources.py), whatever a file says it is.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cardrunner.config.secrets import is_secret_name

USER_SOURCE = "your user config"
"""The `source` of a server defined in the user's own config.toml (config/user.py)."""

CLIENT_SOURCE = "the agent panel's client"
"""The `source` of a server an ACP client passed in `session/new` (acp/mcpservers.py)."""

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${NAME}` or `${NAME:-default}` in a server's command, args, env, url or headers."""


class McpServer(BaseModel):
    """One MCP server: a stdio command, or a Streamable HTTP url."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers for a url server, e.g. Authorization."
    )
    required: bool = False
    timeout: float = Field(30, gt=0, description="Seconds for start-up and for each call.")
    source: str = Field("cardrunner.toml", description="Where it was configured (for messages).")

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServer:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' or 'url'")
        if self.headers and not self.url:
            raise ValueError("'headers' only applies to a 'url' server")
        return self

    @property
    def users_own(self) -> bool:
        """Defined in the user's own config, not by a repository."""
        return self.source == USER_SOURCE

    @property
    def from_client(self) -> bool:
        """Passed in by the ACP client: its values are literal, no `${VAR}` is filled in."""
        return self.source == CLIENT_SOURCE

    def secret_uses(self) -> list[str]:
        """Where this server asks for a secret-looking `${VAR}`: `url uses ${X}` and so on."""
        fields = [("command", self.command or ""), ("url", self.url or "")]
        fields += [("args", a) for a in self.args]
        fields += [(f"env.{k}", v) for k, v in self.env.items()]
        fields += [(f"headers.{k}", v) for k, v in self.headers.items()]
        return [
            f"{where} uses ${{{m.group(1)}}}"
            for where, value in fields
            for m in VAR.finditer(value)
            if is_secret_name(m.group(1))
        ]


def secret_refusal(use: str) -> str:
    """The one wording of a secret not filled in for a repository's server."""
    return (
        f"{use}, a secret; cardrunner fills secrets only for MCP servers "
        f"your own config names (config.toml in your cardrunner config folder, "
        f"docs/security.md), never for one a repository configures"
    )
