"""Reading the settings' files: the user's own folder and config.toml, and a repository's files.

Two layers, kept apart so that what the repository wrote can be judged on its own (the trust
question lists it, trust/requests.py; the user's values win over it, config/precedence.py):

- the user's layer: `config.toml` in the user's own cardrunner folder (below);
- the repository's layer: `[tool.cardrunner]` in `pyproject.toml`, then `cardrunner.toml`, then
  the servers of `.mcp.json` (the format other agent tools use).

An MCP server's settings (`McpServer`) keep where they came from, because where a server was
configured decides what it may be given: a `${VAR}` of a secret-looking name is filled only for
a server the user's own config names (`USER_SOURCE`), never for one a repository wrote
(tools/mcp/hub.py, docs/security.md). A server an ACP client passed in (`CLIENT_SOURCE`) comes
with its values already filled by the client: they are taken literally, and cardrunner fills
nothing of its own environment into them. `source` is set by the loader
(below), whatever a file says it is.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cardrunner.config.paths import outside, user_config_path
from cardrunner.config.secrets import is_secret_name

USER_SOURCE = "your user config"
"""The `source` of a server defined in the user's own config.toml (config/settingsfiles.py)."""

CLIENT_SOURCE = "the agent panel's client"
"""The `source` of a server an ACP client passed in `session/new` (acp/clientside.py)."""

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
    observes: bool | None = Field(
        None,
        description="Its calls observe the running app (evidence for app criteria); unset: "
        "yes for a browser or UI driver (verify/observed.py).",
    )
    timeout: float = Field(30, gt=0, description="Seconds for each call (and start-up).")
    start_timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds to start and list tools; None: `timeout`, but at least 120 for a "
        "server a package runner starts (npx, uvx, bunx, pnpm dlx), which may download first.",
    )
    tools: list[str] | None = Field(None, description="Offer only these tools (each costs tokens).")
    source: str = Field("cardrunner.toml", description="Where it was configured (for messages).")

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServer:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' or 'url'")
        if self.headers and not self.url:
            raise ValueError("'headers' only applies to a 'url' server")
        return self

    @property
    def package_runner(self) -> str | None:
        """The package runner that starts this server (`npx`, `pnpm dlx` …), or None."""
        program = (self.command or "").replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".cmd")
        if program in ("npx", "pnpx", "bunx", "uvx"):
            return program
        verb = self.args[0] if self.args else ""
        runs = program in ("pnpm", "yarn", "bun", "npm") and verb in ("dlx", "x", "exec")
        return f"{program} {verb}" if runs else None

    @property
    def start_seconds(self) -> float:
        """How long the server may take to start and list its tools."""
        if self.start_timeout is not None:
            return self.start_timeout
        return max(self.timeout, 120.0) if self.package_runner else self.timeout

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


class SettingsProblem(BaseModel):
    """One thing wrong with the configuration, worded for the user."""

    file: str
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: {self.message}"


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, tables merged key by key (an `env` table is replaced whole)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "env":
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_toml(path: Path, problems: list[SettingsProblem], shown: str) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(SettingsProblem(file=shown, key="", message=f"cannot read: {exc}"))
    except tomllib.TOMLDecodeError as exc:
        problems.append(SettingsProblem(file=shown, key="", message=f"invalid TOML: {exc}"))
    return {}


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    raw = data.get("mcp")
    return raw if isinstance(raw, dict) else {}  # anything else: validation says so


def user_data(root: Path, problems: list[SettingsProblem]) -> dict[str, Any]:
    """The user's own config.toml, with its servers marked as the user's ({} if none)."""
    path = user_config_path()
    if not path.is_file() or not outside(path.parent, root):
        return {}
    data = _read_toml(path, problems, str(path))
    for server in _servers(data).values():
        if isinstance(server, dict):
            server["source"] = USER_SOURCE
    return data


def repository_data(
    root: Path, problems: list[SettingsProblem], user: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """What the repository's own files set, and their names for messages.

    A server the user's config names is the user's: the repository's server of that name is
    ignored (with a problem), so a repository can never redirect it (and its secrets)."""
    data: dict[str, Any] = {}
    sources: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        tool = _read_toml(pyproject, problems, pyproject.name).get("tool", {})
        if isinstance(tool, dict) and isinstance(tool.get("cardrunner"), dict):
            data = _mark(tool["cardrunner"], "pyproject.toml")
            sources.append("pyproject.toml [tool.cardrunner]")
    own = root / "cardrunner.toml"
    if own.is_file():
        data = deep_merge(data, _mark(_read_toml(own, problems, own.name), "cardrunner.toml"))
        sources.append("cardrunner.toml")
    sources += _package_files(root, data, problems)
    file = " + ".join(sources) or "settings"
    if "endpoint" in data:  # where the code and the credentials go is the user's choice alone
        data.pop("endpoint")
        problems.append(
            SettingsProblem(
                file=file,
                key="endpoint",
                message="ignored: only your own config.toml, the environment or the command "
                "line choose the endpoint (docs/endpoints.md)",
            )
        )
    mcp = _servers(data)
    for name, spec in _read_mcp_json(root, problems).items():
        if name in mcp:
            existing = mcp[name]
            where = existing.get("source", file) if isinstance(existing, dict) else file
            problems.append(
                SettingsProblem(
                    file=".mcp.json",
                    key=f"mcpServers.{name}",
                    message=f"server name {name!r} is also defined as [mcp.{name}] in "
                    f"{where}; rename one of them",
                )
            )
            continue
        mcp[name] = spec
    for name in sorted(set(mcp) & set(_servers(user))):
        where = mcp.pop(name).get("source", file) if isinstance(mcp[name], dict) else file
        problems.append(
            SettingsProblem(
                file=where,
                key=f"mcp.{name}",
                message=f"ignored: your user config defines the MCP server {name!r}",
            )
        )
    if mcp and ("mcp" not in data or isinstance(data["mcp"], dict)):
        data["mcp"] = mcp
    return data, file


def _package_files(root: Path, data: dict[str, Any], problems: list[SettingsProblem]) -> list[str]:
    """Each declared package's own `cardrunner.toml`, merged over its `[packages.NAME]` in
    `data`; the names of the files read. A package's file is the repository's config like the
    root's (the trust question lists its commands); it sets only `[commands]` and `[paths] write` —
    the endpoint, the sandbox, servers and limits stay the root's and the user's."""
    packages = data.get("packages")
    if not isinstance(packages, dict):
        return []
    read: list[str] = []
    for name, entry in packages.items():
        folder = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(folder, str):
            continue  # validation says what is wrong with it
        own = root / folder / "cardrunner.toml"
        if not own.is_file() or outside(own.resolve(), root.resolve()):
            continue
        shown = f"{folder.strip('/')}/cardrunner.toml"
        part = _package_part(_read_toml(own, problems, shown), shown, problems)
        packages[name] = deep_merge(entry, part)
        read.append(shown)
    return read


def _package_part(
    data: dict[str, Any], shown: str, problems: list[SettingsProblem]
) -> dict[str, Any]:
    """What a package's own file may set of `data`; a problem for each key it may not."""
    kept: dict[str, Any] = {}
    for key, value in data.items():
        if key == "commands":
            kept[key] = value
            continue
        if key == "paths" and isinstance(value, dict):
            kept[key] = {k: v for k, v in value.items() if k == "write"}
            dropped = [f"paths.{k}" for k in value if k != "write"]
        else:
            dropped = [key]
        for name in dropped:
            problems.append(
                SettingsProblem(
                    file=shown,
                    key=name,
                    message="ignored: a package's cardrunner.toml sets only [commands] and "
                    "[paths] write; the rest is the repository root's cardrunner.toml or your "
                    "own config's",
                )
            )
    return kept


def _mark(data: dict[str, Any], source: str) -> dict[str, Any]:
    """`data` with every MCP server's `source` set to the file it came from."""
    out = dict(data)
    servers = _servers(out)
    if servers:
        out["mcp"] = {
            name: {**spec, "source": source} if isinstance(spec, dict) else spec
            for name, spec in servers.items()
        }
    return out


def _read_mcp_json(root: Path, problems: list[SettingsProblem]) -> dict[str, Any]:
    """Servers from `.mcp.json` in the format other agent tools use."""
    path = root / ".mcp.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(SettingsProblem(file=".mcp.json", key="", message=f"invalid JSON: {exc}"))
        return {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        problems.append(
            SettingsProblem(
                file=".mcp.json", key="mcpServers", message="expected an object of servers"
            )
        )
        return {}
    out: dict[str, Any] = {}
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            problems.append(
                SettingsProblem(
                    file=".mcp.json", key=f"mcpServers.{name}", message="expected an object"
                )
            )
            continue
        entry = _mcp_json_entry(name, spec, problems)
        if entry is not None:
            out[name] = entry
    return out


_MCP_JSON_KEYS = {
    "command",
    "args",
    "env",
    "url",
    "headers",
    "required",
    "timeout",
    "start_timeout",
    "observes",
}


def _mcp_json_entry(
    name: str, spec: dict[str, Any], problems: list[SettingsProblem]
) -> dict[str, Any] | None:
    """One `.mcp.json` server, validated here so its problems name `.mcp.json`, not the TOML."""
    key = f"mcpServers.{name}"
    kind = spec.get("type", "stdio" if "command" in spec else "http")
    if kind not in {"stdio", "http", "streamable-http"}:
        message = (
            f"transport type {kind!r} is not supported; use a command or a Streamable HTTP url"
        )
        problems.append(SettingsProblem(file=".mcp.json", key=f"{key}.type", message=message))
        return None
    ignored = sorted(set(spec) - _MCP_JSON_KEYS - {"type"})
    if ignored:
        message = f"ignored unknown key(s): {', '.join(ignored)}"
        problems.append(SettingsProblem(file=".mcp.json", key=key, message=message))
    entry = {k: v for k, v in spec.items() if k in _MCP_JSON_KEYS}
    entry["source"] = ".mcp.json"
    try:
        McpServer.model_validate(entry)
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join([key, *(str(p) for p in err["loc"])])
            problems.append(SettingsProblem(file=".mcp.json", key=where, message=err["msg"]))
        return None
    return entry
