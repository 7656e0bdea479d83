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

Nor is a page the model made: a `data:` URL holding the criterion's words, a page it typed into
`about:blank`, another port it serves. So in a run with `app_url`, a browser call counts only when
the page it saw is at the app's origin (scheme, host and port; `localhost`, `127.0.0.1` and
`[::1]` are one host, since only the run's own processes listen on its private loopback and
tools run one at a time, so the app is the one server there a browser call can reach). Playwright
MCP names the page only when it changed (`### Page` / `- Page URL: …`), so the page a call saw is
the last one its server named: folded over the server's calls in order, per call (`_Pages`). It
is believed only from tools that report the page they leave and whose text no one else can put
a line into (`_STEADY`: navigating, clicking, typing, finding, screenshots — with no line break
in their arguments, which Playwright may echo). Any other answer (a failed call, the console's
messages) that names a page leaves it unknown, since the page's own words could be what named
it; one that names none left the page as it was. A tab switch, a restart, or a failure whose
answer was never read leaves it unknown too, and an unknown page does not count. A call that put the model's
own script or content into the browser (`browser_evaluate`, `browser_run_code`, `browser_route`,
a `javascript:` URL, which rewrites the open page and keeps its URL) makes every later call of
that server worthless: routes, init scripts and service workers outlive navigations, and nothing
in a result says when their effect ends. And once the model typed into a browser's fields, a
quote found only in a field's value is what it typed, not what the app shows (`typed`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from cardrunner.config.settingsfiles import McpServer
    from cardrunner.verify.calls import ObservedCall

_BROWSER = r"playwright|puppeteer|chrome-devtools|browser|selenium|webdriver"
_DRIVER = re.compile(_BROWSER + r"|cardrunner\.uiserver|\buiserver\b", re.IGNORECASE)
APP_TOOLS = frozenset({"start_app", "stop_app"})
"""Built-in tools whose results are the running app's own output."""
_PAGE_URL = re.compile(r"^- Page URL: (\S+)", re.MULTILINE)
_NOT_THE_APP = ("file:", "data:", "about:", "chrome:", "view-source:")
_PAGE_SECTION = re.compile(r"^### Page\n- Page URL: (.*)$", re.MULTILINE)
_PAGE_HEADING = re.compile(r"^### Page$", re.MULTILINE)
_NAMING = re.compile(r"^### (?:Page|Open tabs)$", re.MULTILINE)
"""Playwright names the page (and its tabs) in every answer given after any tab's URL, title or
console changed; an answer without these headings left the page as it was."""
_ANSWERED = ("Error: ", "Invalid arguments for ")
"""A failed call Playwright answered (its `### Error`, as tools/mcp/results.py puts it first), or
one the gate refused before it was sent; any other failure (a timeout, a lost server) may have
left a page Playwright named in an answer nobody read."""
_TAB = re.compile(r"^- \d+: (\(current\) )?\[(.*)$", re.MULTILINE)
_CURRENT_TAB = re.compile(r"\[[^\[\]]*\]\(([^\s()\[\]]*)\)(?: \[crashed\])?")
"""`browser_tabs` names the current tab as `- 1: (current) [title](url)`: believed only when the
title holds no bracket and the URL no bracket, parenthesis or space: the title's end is then
Playwright's `](`, and neither can pass for the other."""
_FORWARDED = re.compile(r"they reach it at (http://127\.0\.0\.1:\d+/\S*) instead\.")
"""start_app's own sentence (before the app's `First output:`) naming the relay an MCP server
reached over HTTP uses (processes/liveapp.py)."""
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_STEADY = frozenset(
    [
        "browser_navigate", "browser_navigate_back", "browser_navigate_forward",
        "browser_reload", "browser_click", "browser_fill_form", "browser_type",
        "browser_press_key", "browser_press_sequentially", "browser_select_option",
        "browser_hover", "browser_check", "browser_uncheck", "browser_drag", "browser_find",
        "browser_take_screenshot", "browser_snapshot", "browser_handle_dialog",
        "browser_file_upload", "browser_resize", "browser_wait_for", "browser_mouse_click_xy",
        "browser_mouse_move_xy",
    ]
)  # fmt: skip
"""Playwright MCP tools whose result names the page they leave when it changed, and holds no
text of the page's or the model's that could start a line (a snapshot's lines are its YAML)."""
_TYPING = frozenset(
    {"browser_fill_form", "browser_type", "browser_press_key", "browser_press_sequentially",
     "browser_keydown", "browser_drop", "browser_file_upload", "browser_run_code_unsafe"}
)  # fmt: skip
"""Tools that put the model's words (or a file's name) into the page's fields."""
_FIELD_VALUE = re.compile(
    r'^(\s*- (?:textbox|searchbox|spinbutton|combobox)(?: "(?:[^"\\]|\\.)*")?(?: \[[^\]\n]*\])*): .+$',
    re.MULTILINE,
)
"""A form field's value in Playwright's page snapshot: `- textbox "Username" [ref=e3]: nobody`."""
_REWRITING = frozenset(
    {"browser_evaluate", "browser_run_code", "browser_run_code_unsafe", "browser_route",
     "browser_highlight"}
)  # fmt: skip
"""Tools that put the model's own script or content into the browser."""
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


def drives_browser(name: str, spec: McpServer) -> bool:
    """Does the MCP server `name` look like a browser driver (by name, command, args or URL)?"""
    said = " ".join([name, spec.command or "", *spec.args, spec.url or ""])
    return re.search(_BROWSER, said, re.IGNORECASE) is not None


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
    app_url: str | None = None
    """`[commands] app_url`: a browser's page counts only at its origin. None: a page counts
    unless the browser says it is a file or a page of its own (`data:`, `about:` …)."""

    @classmethod
    def of(
        cls, mcp: Mapping[str, McpServer], app_command: bool, app_url: str | None = None
    ) -> Witnesses:
        observing = [_tool_prefix(n) for n, spec in mcp.items() if server_observes(n, spec)]
        return cls(frozenset(observing), app_command, app_url)

    @property
    def has_app(self) -> bool:
        """Can this run see a running app? Then its criteria are about the app by default."""
        return bool(self.servers) or self.app_command

    @property
    def _pages_only(self) -> bool:
        """A web app with a browser to look at it: what it prints is no page (a `print("No posts
        yet.")` in the app would put the words into `start_app`'s result)."""
        return self.app_url is not None and bool(self.servers)

    def describe(self) -> str:
        """The tools that count, for the model: `mcp__ui__…, start_app`."""
        names = [f"{prefix}…" for prefix in sorted(self.servers)]
        app = sorted(APP_TOOLS) if self.app_command and not self._pages_only else []
        return ", ".join(names + app)

    def watches(self, call: ObservedCall) -> bool:
        """Is `call` one of the means to observe the app (whatever page it saw)? What such a
        call saw going wrong counts against Done."""
        if call.name in APP_TOOLS:
            return self.app_command
        return self._prefix(call) is not None

    def observed(self, call: ObservedCall, calls: Iterable[ObservedCall] = ()) -> bool:
        """Did `call` observe the running app? `calls`: the run's calls, whose earlier ones of
        the same server say which page `call` looked at."""
        return not self.refusal(call, calls)

    def refusal(self, call: ObservedCall, calls: Iterable[ObservedCall] = ()) -> str:
        """Why `call` did not observe the app, in one line for the model; "" when it did."""
        prefix = self._prefix(call)
        if call.name in APP_TOOLS and self.app_command and self._pages_only:
            return (
                f"{call.name} shows the app's log, not its pages: look at the page in the "
                f"browser ({self.describe()})"
            )
        if call.name in APP_TOOLS or prefix is None:
            return "" if self.watches(call) else self._unobserving(call)
        mine = [c for c in calls if c.name.startswith(prefix) and c.seq < call.seq]
        pages = _Pages(prefix)
        for earlier in sorted(mine, key=lambda c: c.seq):
            pages.follow(earlier)
        pages.follow(call)
        if pages.rewriter is not None:
            return (
                f"{pages.rewriter.describe()} put your own script or content into the browser "
                f"of {call.describe()}: nothing that browser shows after it is the app's own"
            )
        if self.app_url is None:
            url = pages.url or ""
            return (
                f"{call.describe()} saw {_cut(url)}, not the app"
                if url.startswith(_NOT_THE_APP)
                else ""
            )
        if pages.url is None:
            return (
                f"{call.describe()} looked at a page the browser did not name ({pages.unknown}); "
                f"browser_navigate to {self.app_url} and look again (the browser names a page "
                "only when it changed)"
            )
        if _origin(pages.url) not in self._origins(calls, call.seq):
            return (
                f"{call.describe()} saw {_cut(pages.url)}, not the app at {self.app_url}: only "
                "a page at the app's origin shows what the app does"
            )
        return ""

    def _unobserving(self, call: ObservedCall) -> str:
        return (
            f"{call.name} did not observe it: cite a call that did ({self.describe()}) — "
            "reading the source or running the tests is not seeing the app. If it can only be "
            "checked in the code, say why in code_level"
        )

    def typed(
        self, cited: Iterable[tuple[ObservedCall, str]], calls: Iterable[ObservedCall]
    ) -> list[str]:
        """Why each (call, quote) cited is no evidence because the quote is only in a form field
        of a browser the model had typed into, one line each: what a field holds is what was
        typed, a key at a time if need be, not what the app shows."""
        calls = list(calls)
        return [why for call, quote in cited if (why := self._typed(call, quote, calls))]

    def _typed(self, call: ObservedCall, quote: str, calls: list[ObservedCall]) -> str:
        prefix = self._prefix(call)
        if prefix is None or not any(
            c.name[len(prefix) :] in _TYPING
            for c in calls
            if c.name.startswith(prefix) and c.seq <= call.seq
        ):
            return ""
        if " ".join(quote.split()) in " ".join(_FIELD_VALUE.sub(r"\1: …", call.text).split()):
            return ""
        return (
            f"the quote {_cut(quote)!r} from {call.describe()} is what a form field holds, and "
            "you typed into this browser's fields: quote what the app shows, not an input"
        )

    def _prefix(self, call: ObservedCall) -> str | None:
        return next((p for p in self.servers if call.name.startswith(p)), None)

    def _origins(self, calls: Iterable[ObservedCall], before: int) -> set[Origin | None]:
        """The app's origin, and the relays start_app named for MCP servers reached over HTTP."""
        found = {_origin(self.app_url or "")}
        for c in calls:
            if c.name == "start_app" and c.seq < before and not c.is_error:
                found |= {
                    _origin(url) for url in _FORWARDED.findall(c.text.split("First output:")[0])
                }
        return found - {None}


Origin = tuple[str, str, int]


def _origin(url: str) -> Origin | None:
    """(scheme, host, port) of an http(s) URL, the loopback names as one; None otherwise
    (`data:`, `about:`, `blob:`, `view-source:` … have no origin a server of ours answers for)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    host = "localhost" if host in _LOOPBACK else host
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


class _Pages:
    """The page one browser server shows, followed call by call (see the module's docstring)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.url: str | None = None
        self.unknown = "the browser has named no page yet"
        self.rewriter: ObservedCall | None = None

    def follow(self, call: ObservedCall) -> None:
        tool = call.name[len(self.prefix) :]
        if tool in _REWRITING or _script_url(call.arguments):
            self.rewriter = self.rewriter or call
        if call.text.startswith("[MCP server "):  # the hub's note: restarted, a new browser
            self.url, self.unknown = None, "the browser was restarted"
        if tool == "browser_tabs" and not call.is_error:
            self.url, self.unknown = _current_tab(call.text), f"{call.describe()} switched tabs"
        elif (call.is_error and not call.text.startswith(_ANSWERED)) or tool == "browser_close":
            self.url, self.unknown = None, f"{call.describe()} may have left another page"
        elif call.is_error or tool not in _STEADY or _broken_line(call.arguments):
            if _NAMING.search(call.text):  # its page's words or ours: we cannot tell them apart
                self.url, self.unknown = None, f"{call.describe()} did not say which page it left"
        elif len(_PAGE_HEADING.findall(call.text)) > 1:
            self.url, self.unknown = None, f"{call.describe()} named more than one page"
        elif named := _PAGE_SECTION.search(call.text):
            self.url = named.group(1).strip()


def _current_tab(text: str) -> str | None:
    """The current tab's URL in `browser_tabs`' list; None unless one tab is, named plainly."""
    current = [rest for mark, rest in _TAB.findall(text) if mark]
    found = _CURRENT_TAB.fullmatch("[" + current[0]) if len(current) == 1 else None
    return found.group(1) if found else None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _broken_line(arguments: Any) -> bool:
    """An argument with a line break: Playwright may echo it, and a line of ours could be it."""
    return any("\n" in s or "\r" in s for s in _strings(arguments))


def _script_url(arguments: Any) -> bool:
    """A `javascript:` URL among the arguments (as a browser reads it: leading blanks and
    control characters, and tabs and line breaks anywhere, ignored; any case)."""
    for value in _strings(arguments.get("url") if isinstance(arguments, dict) else None):
        squeezed = re.sub(r"[\t\n\r]", "", value).lstrip(_C0_AND_SPACE)
        if squeezed.lower().startswith("javascript:"):
            return True
    return False


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
