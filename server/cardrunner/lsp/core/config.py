"""Settings for the server: the workspace files, overridden by what the editor says.

Overrides are `initializationOptions` merged with the `cardrunner` section of
`workspace/configuration` (same shape as cardrunner.toml; only asked when the client supports
it; re-read on `workspace/didChangeConfiguration`). Editors send `null` for unset values, so
nulls are dropped. Invalid settings are a warning and defaults, never a failed start.

The settings are validated by the `Settings` model in a child process (`config/loading.py`), at
start and at every change, and the server keeps what it reads between runs as a plain
`SettingsView` of the model's dump: the idle server never loads pydantic (bench/RESULTS.md, idle
memory). `initialize` does not wait for it: until the first answer the view is the defaults
(with the workspace's own cards folder), and a run asked for before it reads the settings
here, as the child would — a run loads pydantic anyway.

Which folder the settings are read in is decided first (`served_root`): an editor opened at a
monorepo package's folder gets the monorepo root, as the command line does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cardrunner.config.paths import declared_package, default_cards
from cardrunner.config.plainsettings import SettingsView
from cardrunner.lsp.core.client import Client
from cardrunner.processes.sandbox import describe

if TYPE_CHECKING:
    from cardrunner.config.settings import Settings

log = logging.getLogger("cardrunner.lsp.settings")

SECTION = "cardrunner"

CHILD = (sys.executable, "-P", "-m", "cardrunner.config.loading")
"""`-P`: the server starts in the workspace; plain `-m` would put that folder first on
`sys.path`, and a `pydantic.py` left there would run when the settings are read."""
CHILD_SECONDS = 30.0
"""A child that has not answered by then (0.2–0.4 s is usual) is killed, and the settings are
read in the server instead (`TimeoutError` is an `OSError`)."""


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, tables merged key by key."""
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merge(out[key], value) if both else value
    return out


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def served_root(given: Path) -> tuple[Path, str]:
    """The folder the server serves for the editor's workspace folder `given`, and what to tell
    the user about it ("" when it is `given` itself).

    A folder that is (or lies in) a package the enclosing repository's cardrunner.toml declares
    is served as that repository's root, the folder the CLI's `find_root` takes from there
    (never past the first folder holding `.git`). Why not serve the package as given: its own
    cardrunner.toml only adds to the root's, the cards live at the root, and a run has to be
    chosen the package's commands by the root's settings — served as its own workspace it
    showed no cards and would run with the wrong commands, keeping state apart from the CLI's.
    The user is told once, since the cards now served are outside the folder they opened."""
    package = declared_package(given)
    if package is None:
        return given, ""
    return package.root, (
        f"cardrunner: {given} is package {package.name} of the monorepo at {package.root}, "
        "so cardrunner serves the monorepo's cards and settings, as the command line does. "
        f"Open {package.root} as the folder to see its cards beside the code."
    )


class SettingsFeature:
    """Holds the current settings' view; `reload()` validates them again and says what is wrong."""

    def __init__(self, client: Client, root: Callable[[], Path], init_options: Any) -> None:
        """`init_options`: what `initialize` said, without the client's own options."""
        self._client = client
        self._root = root
        self._init_options = init_options
        self.view = SettingsView(cards=default_cards(root()))
        """What the idle server reads of the settings (config/plainsettings.py)."""
        self._dump: dict[str, Any] | None = None
        """The validated settings as `Settings.dump()` (None: not read yet)."""
        self._settings: Settings | None = None
        self._last_warning = ""

    def sandbox_mode(self) -> str:
        """The sandbox mode in force (probing bubblewrap once per process, then cached)."""
        box = self.view.sandbox
        return describe(box.mode, box.network)

    def settings(self) -> Settings:
        """The whole validated `Settings`, for a run: the child's dump validated again here
        (the run loads pydantic), or before the first answer read here from the files and
        initializationOptions, as `initialize` used to."""
        from cardrunner.config.settings import Settings  # with the first run, not idle

        if self._dump is None:
            overrides, problems = self._merge([("initializationOptions", self._init_options)])
            dump, found = validated_here(self._root(), overrides)
            self._set(dump, problems + found)
        if self._settings is None:
            self._settings = Settings.model_validate(self._dump)
        return self._settings

    async def reload(self) -> SettingsView:
        """Files, initializationOptions and the client's configuration, validated again."""
        sources = [
            ("initializationOptions", self._init_options),
            ("workspace/configuration 'cardrunner'", await self._configuration()),
        ]
        overrides, problems = self._merge(sources)
        try:
            dump, found = await validated(self._root(), overrides)
        except (OSError, RuntimeError, ValueError) as exc:  # no child: correct, if not lean
            log.warning("settings read here, the child process failed: %s", exc)
            dump, found = await asyncio.to_thread(validated_here, self._root(), overrides)
        return self._set(dump, problems + found)

    def _set(self, dump: dict[str, Any], problems: list[str]) -> SettingsView:
        before, self.view = self.view, SettingsView.from_dump(dump)
        self._dump, self._settings = dump, None
        self._warn(problems)
        if self.view != before:
            self._client.refresh_code_lenses()  # the forecasts read the limits and prices
        return self.view

    def _merge(self, sources: list[tuple[str, Any]]) -> tuple[dict[str, Any], list[str]]:
        problems: list[str] = []
        overrides: dict[str, Any] = {}
        for name, value in sources:
            if value is None:
                continue
            if not isinstance(value, dict):
                problems.append(f"{name}: expected an object, got {type(value).__name__}")
                continue
            overrides = merge(overrides, without_nulls(value))
        return overrides, problems

    async def _configuration(self) -> Any:
        if not self._client.supports_configuration:
            return None
        try:
            result = await self._client.request(
                types.WORKSPACE_CONFIGURATION,
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]),
            )
        except Exception as exc:
            log.info("workspace/configuration was not answered: %r", exc)
            return None
        return result[0] if isinstance(result, list | tuple) and result else None

    def _warn(self, problems: list[str]) -> None:
        text = "; ".join(problems)
        if text and text != self._last_warning:
            self._client.show_message(
                "cardrunner: invalid settings, defaults used instead: " + text[:1500],
                types.MessageType.Warning,
            )
            log.warning("settings: %s", text)
        self._last_warning = text


def validated_here(root: Path, overrides: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`load_settings` in this process (it loads pydantic here): the dump and the problems."""
    from cardrunner.config.loading import load_settings  # not for an idle server

    settings, found = load_settings(root, overrides or None)
    return settings.dump(), [str(p) for p in found]


async def validated(root: Path, overrides: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`load_settings(root, overrides)` in a child process: the dump and the problems."""
    child = await asyncio.create_subprocess_exec(
        *CHILD,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    asked = json.dumps({"root": str(root), "overrides": overrides or None}).encode()
    try:
        async with asyncio.timeout(CHILD_SECONDS):
            out, _ = await child.communicate(asked)
    finally:  # timed out, or the server stops: the child goes too
        if child.returncode is None:
            child.kill()
            await child.wait()
    if child.returncode != 0:
        raise RuntimeError(f"the settings' child process exited with {child.returncode}")
    answer = json.loads(out)
    return answer["settings"], answer["problems"]
