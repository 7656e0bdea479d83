"""What a repository's own config asks cardrunner to run or to widen: the trust question's list.

Only what the repository wrote counts (config/settingsfiles.py's repository layer), compared with what
the user's own config.toml says: commands (build, test, app), MCP servers (the command or URL,
and the environment variables and headers they are given), the sandbox (off, the network, passed
variables), read paths outside the repository, extra test arguments, `replay`, the commit hooks
and the project's instructions for agents (AGENTS.md or CLAUDE.md and the write area's, by
content: what they say goes into the model's system prompt), and prices and limits that differ
from the user's. Each `Request` carries the exact setting it stands for; the
fingerprint is a hash of those, so any change to them asks again, and nothing else does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cardrunner.config.confinement import TestArgs
from cardrunner.config.instructions import instruction_files
from cardrunner.config.loading import load_settings, repository_settings, user_settings
from cardrunner.config.packages import package_write_areas
from cardrunner.config.readfile import read_regular
from cardrunner.config.settings import Commands, Settings
from cardrunner.config.settingsfiles import McpServer
from cardrunner.git.safety import safe_argv


@dataclass(frozen=True)
class Request:
    """One thing the repository asks for: the setting (`key`, `value`) and its wording."""

    key: str
    value: Any
    text: str


def _argv(argv: list[str]) -> str:
    return shlex.join(argv)


def _server(name: str, spec: McpServer) -> Request:
    if spec.url:
        what = f"connects to {spec.url}"
        if spec.headers:
            what += f" with the headers {', '.join(sorted(spec.headers))}"
    else:
        what = f"runs `{_argv([spec.command or '', *spec.args])}`"
        if spec.env:
            what += f" with the environment variables {', '.join(sorted(spec.env))}"
    value = spec.model_dump(mode="json", exclude={"timeout", "start_timeout", "required"})
    return Request(f"mcp.{name}", value, f"MCP server '{name}' ({spec.source}) {what}")


def _outside(root: Path, folder: str) -> bool:
    return not (root / folder).resolve().is_relative_to(root.resolve())


def _commands(repo: Settings) -> list[Request]:
    """The root's commands, then each package's (a package's own cardrunner.toml is the
    repository's config like the root's: its commands run nothing before consent)."""
    out = _command_set("commands", "", repo.commands)
    for name, package in sorted(repo.packages.items()):
        where = f"package {name} ({package.path}): "
        out += _command_set(f"packages.{name}.commands", where, package.commands)
    return out


def _command_set(key: str, where: str, commands: Commands) -> list[Request]:
    out = []
    for kind in ("build", "test", "app"):
        argv = getattr(commands, kind)
        if argv:
            out.append(Request(f"{key}.{kind}", argv, f"{where}{kind} command: `{_argv(argv)}`"))
    extra = sorted(
        (set(commands.test_args.flags) | set(commands.test_args.values))
        - (set(TestArgs().flags) | set(TestArgs().values))
    )
    if extra:
        out.append(
            Request(
                f"{key}.test_args",
                extra,
                f"{where}test options the model may pass beyond the defaults: {', '.join(extra)}",
            )
        )
    return out


def _confinement(root: Path, repo: Settings) -> list[Request]:
    out = []
    box = repo.sandbox
    if box.mode == "off":
        out.append(
            Request(
                "sandbox.mode",
                "off",
                "sandbox OFF: build, test, app and MCP servers run with all your rights",
            )
        )
    if box.network:
        out.append(Request("sandbox.network", True, "sandboxed commands may use the network"))
    if box.env:
        names = ", ".join(box.env)
        out.append(Request("sandbox.env", box.env, f"commands get the variables {names}"))
    outside = [f for f in repo.paths.read if _outside(root, f)]
    if outside:
        out.append(Request("paths.read", outside, _reads_outside(root, outside)))
    return out


def _reads_outside(root: Path, outside: list[str]) -> str:
    """What widening `paths.read` reaches: the folders, which of them reach the home, and what
    stays unreadable whatever they say (tools/guard.py refuses it)."""
    home = Path.home().resolve()
    homely = [f for f in outside if home.is_relative_to((root / f).resolve())]
    reach = f" ({', '.join(homely)} reaches your home folder)" if homely else ""
    return (
        f"the model may read outside the repository: {', '.join(outside)}{reach}; secret "
        "stores (~/.ssh, ~/.aws, ~/.git-credentials, ~/.config/gh, ~/.netrc and the like), "
        "/proc and .git stay unreadable"
    )


def _limit(value: float | None) -> str:
    return f"{value:g}" if value else "off"


def _money(repo: Settings, user: Settings) -> list[Request]:
    """Prices and limits the repository sets that differ from the user's."""
    out = []
    for name, price in repo.prices.items():
        if price != user.price(name):
            shown = f"${price.input:g}/${price.output:g} per million tokens in/out"
            out.append(Request(f"prices.{name}", asdict(price), f"price of {name}: {shown}"))
    mine = user.limits.model_dump()
    for key, value in repo.limits.model_dump().items():
        if key in repo.limits.model_fields_set and value != mine[key]:
            text = f"limit {key}: {_limit(value)} (yours: {_limit(mine[key])})"
            out.append(Request(f"limits.{key}", value, text))
    return out


def requests(root: Path) -> list[Request]:
    """Everything the repository at `root` asks for, in the order the question lists it."""
    repo, user = repository_settings(root), user_settings(root)
    out = _commands(repo)
    out += [_server(n, s) for n, s in sorted(repo.mcp.items()) if not s.users_own]
    out += _confinement(root, repo)
    if repo.replay:
        out.append(
            Request(
                "replay",
                repo.replay,
                f"replay: plays the repository's transcript {repo.replay} instead of the model",
            )
        )
    return out + _hooks(root, repo) + _instructions(root) + _money(repo, user)


_HOOKS = ("pre-commit", "commit-msg")
"""The repository's hooks a run runs (verify/hooks.py): the question names them, by content."""


def _hooks(root: Path, repo: Settings) -> list[Request]:
    """The repository's own commit hooks, when they would run: their paths and a hash each."""
    if not repo.git.hooks:
        return []
    folders = [root / ".git" / "hooks", root / ".husky"]
    try:
        configured = subprocess.run(
            safe_argv(root, "config", "--local", "--get", "core.hooksPath"),
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30, check=False,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        configured = ""
    if configured:
        folders.insert(0, root / configured)
    found: dict[str, str] = {}
    for folder in folders:
        for name in _HOOKS:
            hook = folder / name
            if hook.is_file() and os.access(hook, os.X_OK):
                rel = os.path.relpath(hook, root)
                found[rel] = hashlib.sha256(hook.read_bytes()).hexdigest()
    if not found:
        return []
    text = f"commit hooks: {', '.join(sorted(found))} run (in the sandbox) before each review"
    return [Request("git.hooks", found, text)]


def _instructions(root: Path) -> list[Request]:
    """The project's instruction files a run would read into its system prompt, each with a
    hash of its bytes (a changed AGENTS.md asks again); none when the settings switch them off
    (the user's settings win over the repository's, as for a run)."""
    settings, _ = load_settings(root)
    if not settings.agent.project_instructions:
        return []
    found: dict[str, str] = {}
    write = [*settings.paths.write, *package_write_areas(settings)]  # a package card's AGENTS.md
    for path in instruction_files(root, write):
        try:
            data = read_regular(path, 1 << 24)
        except OSError as exc:  # a FIFO, a folder: a run will not read it either
            data = f"unreadable: {type(exc).__name__}".encode()
        found[os.path.relpath(path, root)] = hashlib.sha256(data).hexdigest()
    if not found:
        return []
    text = (
        f"project instructions: {', '.join(found)} go into the model's system prompt "
        "(by content: a changed file asks again)"
    )
    return [Request("agent.instructions", found, text)]


def fingerprint(asked: list[Request]) -> str:
    """A hash of exactly the settings in `asked`."""
    data = json.dumps([[r.key, r.value] for r in asked], sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()
