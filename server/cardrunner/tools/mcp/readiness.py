"""What a configured stdio MCP server needs before a sandboxed run can start it, said up front.

A server that cannot start is found out only when a run starts it: after the start timeout, with
stderr that is often empty (npm retries silently without the network). `cardrunner check` asks
here first and says what is missing and how to install it: the program itself; no `npx`-style
launcher, which fetches the package from the registry at every start while the sandbox's network
is closed; and for Playwright MCP a browser it can find, a headless one (a run has no display),
and an `--output-dir` in the run's folder (its default, `.playwright-mcp/` in the work tree,
would put snapshots and logs into the review and the commit).

No process is started and the `mcp` SDK is not imported: this reads the settings and the disk.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from cardrunner.config.settingsfiles import VAR, McpServer
from cardrunner.tools.mcp.hub import RUN_DIR_VAR

PLAYWRIGHT_MCP = "@playwright/mcp@0.0.86"
"""The Playwright MCP release the docs (docs/webapp.md) and CI pin."""

INSTALL = f"npm install --save-dev {PLAYWRIGHT_MCP}"
INSTALLED = "node_modules/.bin/playwright-mcp"
"""Where that install puts the program, relative to the repository (the command's form)."""
CHROMIUM = "/usr/bin/chromium"

LAUNCHERS = frozenset({"npx", "bunx", "pnpx", "uvx"})
"""Programs that download the package they run when it is not cached yet."""


def _expand(value: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` as a run would fill it; the run's folder (`${CARDRUNNER_RUN_DIR}`) stays named."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) == RUN_DIR_VAR:
            return match.group(0)
        return environ.get(match.group(1), match.group(2) or "")

    return VAR.sub(one, value)


def _is_playwright(argv: list[str]) -> bool:
    return any("playwright-mcp" in a or "@playwright/mcp" in a for a in argv)


def _program(command: str, root: Path, path: str) -> str | None:
    if "/" in command:
        found = Path(command) if Path(command).is_absolute() else root / command
        return str(found) if found.is_file() and os.access(found, os.X_OK) else None
    return shutil.which(command, path=path)


def _option(argv: list[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value`; "" for a flag without one."""
    for i, arg in enumerate(argv):
        if arg == name:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _playwright_browsers(environ: Mapping[str, str]) -> bool:
    """Whether Playwright's own browser download (`playwright install chromium`) is present."""
    folder = environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path.home() / ".cache/ms-playwright")
    return any(Path(folder).glob("chromium*"))


def _playwright_problems(name: str, argv: list[str], environ: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    browser = _option(argv, "--executable-path")
    if browser is not None and not os.access(browser, os.X_OK):
        out.append(
            f"mcp.{name}: no browser at {browser!r}; install the distribution's chromium "
            f"(apt-get install chromium) or name the browser you have"
        )
    elif (
        browser is None and _option(argv, "--browser") is None and not _playwright_browsers(environ)
    ):
        out.append(
            f"mcp.{name}: Playwright's own chromium is not installed; add "
            f'"--executable-path", "{CHROMIUM}" (apt-get install chromium) or install it '
            f"once with the network: npx playwright install chromium"
        )
    if _option(argv, "--headless") is None:
        out.append(f'mcp.{name}: a run has no display; add "--headless"')
    outdir = _option(argv, "--output-dir")
    if not outdir or RUN_DIR_VAR not in outdir:
        out.append(
            f"mcp.{name}: Playwright writes snapshots, logs and screenshots into the work tree "
            "(.playwright-mcp/), where they end up in the review and the commit; add "
            '"--output-dir", "${CARDRUNNER_RUN_DIR}/browser" (the run\'s own folder)'
        )
    return out


def server_problems(
    name: str, spec: McpServer, root: Path, path: str, network: bool,
    environ: Mapping[str, str] | None = None,
) -> list[str]:  # fmt: skip
    """Why the stdio server `name` would not start (or would spoil a run), one line each."""
    if not spec.command:
        return []
    env = os.environ if environ is None else environ
    command = _expand(spec.command, env)
    argv = [command, *(_expand(a, env) for a in spec.args)]
    playwright = _is_playwright(argv)
    if Path(command).name in LAUNCHERS:
        how = (
            f"install it once ({INSTALL}) and name its program: command = {INSTALLED!r}"
            if playwright
            else "install the package once and name its installed program as `command`"
        )
        if not network:
            return [
                f"mcp.{name}: {Path(command).name} asks the registry for the server when it "
                f"starts (and downloads it when npm's cache lacks it), and the run's sandbox "
                f"has no network, so it cannot start; {how}"
            ]
    elif _program(command, root, path) is None:
        fix = f"install it ({INSTALL})" if playwright else "install it, or name it by its path"
        return [f"mcp.{name}: the program {spec.command!r} is not found; {fix}"]
    return _playwright_problems(name, argv, env) if playwright else []
