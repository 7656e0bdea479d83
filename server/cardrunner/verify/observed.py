"""Which calls observed the running app, and what went wrong in it while they did.

Reading the template that holds "Please enter a title" does not show that the page shows it.
So a run that can see a running app — `[commands] app`, or an MCP server that drives a browser
or a UI — accepts evidence for an app criterion only from a call that observed the app: a tool
of an observing server, or `start_app`/`stop_app`, whose results are the app's own output.
`read_file`, `list_files` and test runs never do; a card marks a criterion that can only be
checked in the code with `(code)` (card/body.py).

A server observes when its settings say `observes = true`; unset, when it looks like a browser
or UI driver by its name, command, arguments or URL (Playwright, Puppeteer, Chrome DevTools,
cardrunner's own `uiserver`). We decide by the settings, not by the tools a server lists: the
rule is then known before any server starts, the same after a server restarts with other tools,
and a server cannot make itself a witness by naming a tool `browser_…`.

What a browser saw going wrong counts against Done: console errors, a failed request or a 5xx
answer, a crashed page. Playwright MCP's results are read strictly in its own format: its
`### Page` section (`- Console: 2 errors, 0 warnings`, `- HTTP status: 500 …`, `- Page status:
crashed`), the `[ERROR] …` lines of `browser_console_messages` and the `N. [GET] url => [500] …`
or `=> [FAILED] …` lines of `browser_network_requests`. A page the browser opened from a file
(`- Page URL: file:///…/index.html`) is the source again, not the app.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cardrunner.config.settingsfiles import McpServer
    from cardrunner.verify.calls import ObservedCall

_DRIVER = re.compile(
    r"playwright|puppeteer|chrome-devtools|browser|selenium|webdriver|cardrunner\.uiserver"
    r"|\buiserver\b",
    re.IGNORECASE,
)
APP_TOOLS = frozenset({"start_app", "stop_app"})
"""Built-in tools whose results are the running app's own output."""
_PAGE_URL = re.compile(r"^- Page URL: (\S+)", re.MULTILINE)
_NOT_THE_APP = ("file:", "data:", "about:", "chrome:", "view-source:")
_CONSOLE = re.compile(r"^- Console: (\d+) errors?, \d+ warnings?$", re.MULTILINE)
_HTTP = re.compile(r"^- HTTP status: (5\d\d\b.*)$", re.MULTILINE)
_CRASHED = re.compile(r"^- Page status: crashed$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^(?:- )?\[ERROR\] (.+)$", re.MULTILINE)
_REQUEST = re.compile(r"^(?:\d+\. )?\[([A-Z]+)\] (\S+) => \[(FAILED|5\d\d)\](.*)$", re.MULTILINE)
_UNREAD_ENTRIES = re.compile(r"^- New console entries: \S+#L\d+$", re.MULTILINE)
"""Playwright's link to the new entries, left as it was (tools/mcp/results.py shows them in its
place when it can read them). The page's `- Console: N errors` counts every error since the page
opened, so where the entries are shown, or none are new, the entries alone say what went wrong:
the count would hold a favicon's 404 against Done, and an error already seen against every later
call."""
_FAVICON = re.compile(r"/favicon\.ico(?:[?#:\s]|$)")
"""A page without a favicon is not a broken page: the browser asks for one on its own."""
_SHOWN = 160


def server_observes(name: str, spec: McpServer) -> bool:
    """Does the MCP server `name` observe the running app (a browser or UI driver)?"""
    if spec.observes is not None:
        return spec.observes
    said = " ".join([name, spec.command or "", *spec.args, spec.url or ""])
    return _DRIVER.search(said) is not None


def _tool_prefix(server: str) -> str:
    """How the hub names the server's tools (`mcp__<server>__<tool>`, unsafe bytes as `_`)."""
    return "mcp__" + re.sub(r"[^a-zA-Z0-9_-]", "_", server) + "__"


@dataclass(frozen=True)
class Witnesses:
    """The run's means to observe its app; none: a run without an app (a library)."""

    servers: frozenset[str] = frozenset()
    """Observing MCP servers, by the prefix of their tools' names."""
    app_command: bool = False
    """`[commands] app` is set: `start_app` and `stop_app` show the app's output."""

    @classmethod
    def of(cls, mcp: Mapping[str, McpServer], app_command: bool) -> Witnesses:
        observing = [_tool_prefix(n) for n, spec in mcp.items() if server_observes(n, spec)]
        return cls(frozenset(observing), app_command)

    @property
    def has_app(self) -> bool:
        """Can this run see a running app? Then its criteria are about the app by default."""
        return bool(self.servers) or self.app_command

    def describe(self) -> str:
        """The tools that count, for the model: `mcp__ui__…, start_app`."""
        names = [f"{prefix}…" for prefix in sorted(self.servers)]
        return ", ".join(names + (sorted(APP_TOOLS) if self.app_command else []))

    def observed(self, call: ObservedCall) -> bool:
        """Did `call` observe the running app (and not a file the browser opened)?"""
        if call.name in APP_TOOLS:
            return self.app_command
        if not any(call.name.startswith(prefix) for prefix in self.servers):
            return False
        return not any(url.startswith(_NOT_THE_APP) for url in _PAGE_URL.findall(call.text))


def app_errors(text: str) -> list[str]:
    """What a browser result says went wrong in the app, one line each; empty when nothing."""
    found: list[str] = []
    if _UNREAD_ENTRIES.search(text):  # the entries were not shown: their count is all we know
        found += [f"the page logged {n} console error(s)" for n in _CONSOLE.findall(text) if int(n)]
    found += [f"the page answered HTTP {_cut(status)}" for status in _HTTP.findall(text)]
    found += ["the page crashed"] if _CRASHED.search(text) else []
    found += [
        f"console error: {_cut(line)}"
        for line in _ERROR_LINE.findall(text)
        if not _FAVICON.search(line)
    ]
    for method, url, status, rest in _REQUEST.findall(text):
        if not _FAVICON.search(url):
            found.append(f"request {method} {_cut(url)} => {status} {_cut(rest)}".rstrip())
    return list(dict.fromkeys(found))


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
