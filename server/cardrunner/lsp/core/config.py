"""Settings for the server: the workspace files, overridden by what the editor says.

Overrides are `initializationOptions` merged with the `cardrunner` section of
`workspace/configuration` (same shape as cardrunner.toml; only asked when the client supports
it; re-read on `workspace/didChangeConfiguration`). Editors send `null` for unset values, so
nulls are dropped. Invalid settings are a warning and defaults, never a failed start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from cardrunner.config.loading import load_settings
from cardrunner.config.settings import Settings
from cardrunner.lsp.core.client import Client
from cardrunner.processes.sandbox import describe

log = logging.getLogger("cardrunner.lsp.settings")

SECTION = "cardrunner"


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


class SettingsFeature:
    """Holds the current `Settings`; `reload()` reads them again and says what is wrong."""

    def __init__(self, client: Client, root: Callable[[], Path]) -> None:
        self._client = client
        self._root = root
        self.init_options: Any = None
        self.settings = Settings()
        self._last_warning = ""

    def sandbox_mode(self) -> str:
        """The sandbox mode in force (probing bubblewrap once per process, then cached)."""
        box = self.settings.sandbox
        return describe(box.mode, box.network)

    def load_initial(self) -> Settings:
        """During `initialize` (no requests to the client allowed yet): files and
        initializationOptions. A few small files, read once before anything else can happen."""
        return self._apply(*self._merge([("initializationOptions", self.init_options)]))

    async def reload(self) -> Settings:
        """Files, initializationOptions and the client's configuration, read again."""
        sources = [
            ("initializationOptions", self.init_options),
            ("workspace/configuration 'cardrunner'", await self._configuration()),
        ]
        overrides, problems = self._merge(sources)
        settings, found = await asyncio.to_thread(load_settings, self._root(), overrides or None)
        return self._set(settings, problems + [str(p) for p in found])

    def _apply(self, overrides: dict[str, Any], problems: list[str]) -> Settings:
        settings, found = load_settings(self._root(), overrides or None)
        return self._set(settings, problems + [str(p) for p in found])

    def _set(self, settings: Settings, problems: list[str]) -> Settings:
        self.settings = settings
        self._warn(problems)
        return settings

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
