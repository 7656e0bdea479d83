"""Reading the settings' files: the user's own folder and config.toml, and a repository's files.

Two layers, kept apart so that what the repository wrote can be judged on its own (the trust
question lists it, trust/requests.py; the user's values win over it, config/precedence.py):

- the user's layer: `config.toml` in the user's own cardrunner folder (below);
- the repository's layer: `[tool.cardrunner]` in `pyproject.toml`, then `cardrunner.toml`, then
  the servers of `.mcp.json` (the format other agent tools use).

Every MCP server's `source` is set here, whatever a file says, because it decides whether a
secret may be filled in for the server (`McpServer`, config/settings.py).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cardrunner.config.paths import outside, user_config_path
from cardrunner.config.settings import USER_SOURCE, McpServer


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
    file = " + ".join(sources) or "settings"
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
