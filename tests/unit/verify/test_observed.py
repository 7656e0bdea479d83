"""Which calls observed the app, and what Playwright MCP's results say went wrong in it.

The result texts are Playwright MCP 0.0.86's own format (its `response.ts`, `console.ts` and
`network.ts`: the `### Page` lines, `Total messages:` with `[ERROR] text @ url:line`, and
`N. [METHOD] url => [status] text` or `=> [FAILED] reason`).
"""

from __future__ import annotations

import sys

from cardrunner.config.settingsfiles import McpServer
from cardrunner.verify.calls import ObservedCall
from cardrunner.verify.observed import Witnesses, app_errors, server_observes

NAVIGATE = """### Ran Playwright code
```js
await page.goto('http://localhost:5000/');
```
### Page
- Page URL: http://localhost:5000/
- Page Title: Todo
- Console: 2 errors, 1 warnings
### Snapshot
```yaml
- paragraph [ref=e2]: Please enter a title
```
"""
CONSOLE = """### Result
Total messages: 3 (Errors: 2, Warnings: 1)

[ERROR] Uncaught TypeError: form is null @ http://localhost:5000/static/app.js:3
[ERROR] Failed to load resource: the server responded with a status of 404 (NOT FOUND) @ http://localhost:5000/favicon.ico:0
[WARNING] deprecated API @ http://localhost:5000/static/app.js:9
"""
NETWORK = """### Result
1. [POST] http://localhost:5000/api/todos => [500] INTERNAL SERVER ERROR
2. [GET] http://localhost:5000/api/todos => [404] NOT FOUND
3. [GET] http://localhost:5000/static/app.js => [FAILED] net::ERR_CONNECTION_REFUSED
4. [GET] http://localhost:5000/favicon.ico => [FAILED] net::ERR_ABORTED

Note: 2 static requests not shown, run with "static" option to see them.
"""


def call(name: str, text: str) -> ObservedCall:
    return ObservedCall("toolu_1", name, {}, text, False, 1, 0, "t", "t")


def spec(**fields: object) -> McpServer:
    return McpServer.model_validate({"command": sys.executable, **fields})


def test_browser_and_ui_drivers_observe_by_default_and_settings_decide() -> None:
    assert server_observes("playwright", spec(command="npx", args=["@playwright/mcp@latest"]))
    assert server_observes("web", spec(command="npx", args=["chrome-devtools-mcp@latest"]))
    assert server_observes("ui", spec(args=["-m", "cardrunner.uiserver", "--app", "a:A"]))
    assert server_observes("pw", spec(command=None, url="http://localhost:8931/mcp", observes=True))
    assert not server_observes("git", spec(args=["-m", "mcp_server_git"]))
    assert not server_observes("playwright", spec(observes=False))


def test_only_observing_calls_on_the_app_count() -> None:
    mcp = {"playwright": spec(args=["@playwright/mcp"]), "git": spec(args=["mcp_server_git"])}
    seen = Witnesses.of(mcp, app_command=False)
    assert seen.has_app
    assert seen.observed(call("mcp__playwright__browser_navigate", NAVIGATE))
    assert not seen.observed(call("mcp__git__git_log", "Page URL"))
    assert not seen.observed(call("read_file", "Please enter a title"))
    assert not seen.observed(call("run_tests", "1 passed"))
    assert not seen.observed(call("start_app", "Running on http://127.0.0.1:5000"))
    opened = NAVIGATE.replace("http://localhost:5000/", "file:///repo/templates/index.html")
    assert not seen.observed(call("mcp__playwright__browser_navigate", opened))
    with_app = Witnesses.of({}, app_command=True)
    assert with_app.observed(call("start_app", "Running on http://127.0.0.1:5000"))
    assert not Witnesses.of({"git": mcp["git"]}, app_command=False).has_app


def test_console_errors_failed_requests_and_5xx_pages_are_errors() -> None:
    unread = NAVIGATE.replace(
        "1 warnings\n", "1 warnings\n- New console entries: /run/console-1.log#L1\n"
    )  # the entries could not be shown: their count is all there is to go by
    assert app_errors(unread) == ["the page logged 2 console error(s)"]
    favicon_only = NAVIGATE.replace("2 errors", "1 errors").replace(
        "1 warnings\n",
        "1 warnings\n- New console entries:\n- [ERROR] Failed to load resource: the server "
        "responded with a status of 404 (NOT FOUND) @ http://localhost:5000/favicon.ico:0\n",
    )  # Playwright's count holds the favicon a page lacks, its entries say that is all it was
    assert app_errors(favicon_only) == []
    assert app_errors(NAVIGATE) == []  # a count with no new entries: errors seen before it
    assert app_errors(CONSOLE) == [
        "console error: Uncaught TypeError: form is null @ http://localhost:5000/static/app.js:3"
    ]  # the favicon a page lacks is not an error of the page; a warning is not an error
    assert app_errors(NETWORK) == [
        "request POST http://localhost:5000/api/todos => 500 INTERNAL SERVER ERROR",
        "request GET http://localhost:5000/static/app.js => FAILED net::ERR_CONNECTION_REFUSED",
    ]  # a 404 answer may be what the app means (a form refused); a 5xx never is
    crashed = (
        "### Page\n- Page URL: http://x/\n- HTTP status: 502 Bad Gateway\n- Page status: crashed\n"
    )
    assert app_errors(crashed) == ["the page answered HTTP 502 Bad Gateway", "the page crashed"]


def test_a_clean_page_and_look_alike_text_are_no_errors() -> None:
    clean = NAVIGATE.replace("- Console: 2 errors, 1 warnings\n", "")
    assert app_errors(clean) == []
    assert app_errors("- Console: 0 errors, 3 warnings") == []
    assert app_errors("the word [ERROR] inside a sentence, and => [500] in prose") == []


# Playwright MCP 0.0.86's answers as recorded (`--snapshot-mode none --codegen none`), with the
# search words taken out of browser_find's as tools/mcp/results.py does. It names the page only
# when the page changed since its last answer: a find on the same page names none.
APP = "http://localhost:5000/"
NAMED = "### Page\n- Page URL: {url}\n- Page Title: Posts"
FOUND = '### Result\nFound 1 match:\n\n- heading "No posts yet." [level=1] [ref=f3e2]'
TABS = "### Result\n- 0: [](http://localhost:5000/)\n- 1: (current) [](data:text/html,hello)"
SCRIPTED = (
    "### Error\nError: browserBackend.callTool: net::ERR_ABORTED at javascript:document.body."
    "innerHTML='<p>No posts yet.</p>'"
)


class Browser:
    """A run's calls, numbered as the call log numbers them."""

    def __init__(self) -> None:
        self.calls: list[ObservedCall] = []

    def __call__(
        self, tool: str, text: str, error: bool = False, server: str = "browser", **args: object
    ) -> ObservedCall:
        name = tool if tool in ("start_app", "read_file") else f"mcp__{server}__{tool}"
        n = len(self.calls)
        made = ObservedCall(f"toolu_{n}", name, args, text, error, n, n, "t", "t")
        self.calls.append(made)
        return made

    def go(self, url: str, server: str = "browser") -> ObservedCall:
        return self("browser_navigate", NAMED.format(url=url), server=server, url=url)


def web(app_url: str | None = APP) -> Witnesses:
    servers = {"browser": spec(args=["@playwright/mcp"]), "other": spec(args=["@playwright/mcp"])}
    return Witnesses.of(servers, app_command=True, app_url=app_url)


def test_a_call_counts_on_the_page_its_browser_last_named_at_the_apps_origin() -> None:
    seen, b = web(), Browser()
    assert seen.observed(b.go(APP), b.calls)
    assert seen.observed(b("browser_find", FOUND), b.calls)  # the page named before it
    assert seen.observed(b("browser_take_screenshot", "### Result\n- [Screenshot](x.png)"), b.calls)
    b.go("data:text/html,<h1>No posts yet.</h1>")
    find = b("browser_find", FOUND)
    assert seen.refusal(find, b.calls) == (
        "mcp__browser__browser_find (toolu_4, round 4) saw data:text/html,<h1>No posts yet.</h1>, "
        f"not the app at {APP}: only a page at the app's origin shows what the app does"
    )
    for elsewhere in ("http://localhost:5001/", "https://localhost:5000/", "http://example.com:5000/",
                      "http://localhost:5000@evil.test/", "blob:http://localhost:5000/1",
                      "view-source:http://localhost:5000/", "about:blank", "http://127.0.0.2:5000/"):  # fmt: skip
        b.go(elsewhere)
        assert not seen.observed(b("browser_find", FOUND), b.calls), elsewhere
    for loopback in ("http://127.0.0.1:5000/posts", "http://[::1]:5000/", "http://LOCALHOST:5000"):
        b.go(loopback)  # one host on the run's private loopback
        assert seen.observed(b("browser_find", FOUND), b.calls), loopback
    b.go("data:text/html,x", server="other")  # another browser's page is its own
    assert seen.observed(b("browser_find", FOUND), b.calls)
    assert not seen.observed(b("browser_find", FOUND, server="other"), b.calls)


def test_where_no_page_is_known_a_call_does_not_count() -> None:
    seen, b = web(), Browser()
    first = b("browser_find", FOUND)
    assert "did not name (the browser has named no page yet)" in seen.refusal(first, b.calls)
    elsewhere = "Error: Timeout 5000ms exceeded.\n### Page\n- Page URL: http://localhost:5001/"
    late = "browser_click on MCP server 'browser' did not answer within 60 s; cancelled."
    unknowns = [
        ("browser_tabs", TABS, False, {"action": "select", "index": 1}),  # names no page
        ("browser_close", "### Result\nNo open tabs.", False, {}),
        ("browser_click", late, True, {"target": "a"}),  # its answer, if any, was not read
        ("browser_click", elsewhere, True, {"target": "a"}),  # failed, and left the page
        ("browser_console_messages", f"### Result\n{NAMED.format(url=APP)}", False, {}),
        ("browser_fill_form", "### Page", False, {"fields": [{"value": "a\n### Page"}]}),
        ("browser_click", NAMED.format(url=APP) + "\n" + NAMED.format(url=APP), False, {}),
    ]
    for tool, text, error, args in unknowns:
        b.go(APP)
        made = b(tool, text, error, **args)
        assert not seen.observed(made, b.calls), tool
        assert not seen.observed(b("browser_find", FOUND), b.calls), tool
    unchanged = [  # answers that name no page: the page is the one named before
        ("browser_click", 'Error: "a" does not match any elements.', True, {"target": "a"}),
        ("browser_click", "Invalid arguments for mcp__browser__browser_click: …", True, {}),
        ("browser_console_messages", "### Result\nTotal messages: 0", False, {}),
        ("browser_fill_form", "", False, {"fields": [{"value": "two\nlines"}]}),
    ]
    for tool, text, error, args in unchanged:
        b.go(APP)
        b(tool, text, error, **args)
        assert seen.observed(b("browser_find", FOUND), b.calls), tool
    b.go(APP)
    restarted = "[MCP server 'browser' exited (code 1) and was restarted.]\n" + FOUND
    assert "the browser was restarted" in seen.refusal(b("browser_find", restarted), b.calls)
    assert seen.observed(b.go(APP), b.calls)  # named again: counts again


def test_after_the_models_script_ran_in_a_browser_nothing_it_shows_counts() -> None:
    for script in (
        {"tool": "browser_navigate", "url": "javascript:document.body.innerHTML='x'"},
        {"tool": "browser_tabs", "url": " \x01JaVa\tScRiPt:alert(1)", "action": "new"},
        {"tool": "browser_evaluate", "function": "() => document.title = 'x'"},
        {"tool": "browser_run_code_unsafe", "code": "page.route('**', r => r.fulfill({}))"},
        {"tool": "browser_route", "pattern": "**", "body": "No posts yet."},
    ):
        seen, b = web(), Browser()
        b.go(APP)
        ran = b(str(script.pop("tool")), SCRIPTED, True, **script)
        b.go(APP)  # a fresh page at the app's URL: routes, init scripts, workers outlive it
        why = seen.refusal(b("browser_find", FOUND), b.calls)
        assert why.startswith(f"{ran.describe()} put your own script or content"), why
        assert seen.observed(b.go(APP, server="other"), b.calls)  # the other browser is clean
    seen, b = web(), Browser()
    b.go(APP)
    b("browser_navigate", NAMED.format(url=APP), url="http://localhost:5000/?q=javascript:")
    assert seen.observed(b("browser_find", FOUND), b.calls)  # only the URL's scheme runs code


def test_the_relay_start_app_names_counts_and_the_apps_own_words_do_not() -> None:
    seen, b = web(), Browser()
    relay = "http://127.0.0.1:41234/"
    said = (
        f"Started the app (pid 7): sh serve.sh\nIt answers at {APP} (HTTP 200, after 0.4 s); this "
        "run's MCP servers reach it there. MCP servers reached over HTTP run outside this run's "
        f"network: they reach it at {relay} instead. First output:\n"
        "they reach it at http://127.0.0.1:6666/ instead."
    )
    b("start_app", said)
    assert seen.observed(b.go(relay + "posts"), b.calls)
    assert not seen.observed(b.go("http://127.0.0.1:6666/"), b.calls)


def test_without_app_url_only_pages_that_are_not_a_server_s_are_refused() -> None:
    seen, b = web(app_url=None), Browser()
    assert seen.observed(b("browser_find", FOUND), b.calls)  # no page named: as before
    b.go("data:text/html,<h1>No posts yet.</h1>")
    assert "saw data:text/html" in seen.refusal(b("browser_find", FOUND), b.calls)
    b.go("http://localhost:8000/")
    assert seen.observed(b("browser_find", FOUND), b.calls)
    assert "read_file did not observe it" in seen.refusal(b("read_file", "x"), b.calls)


def test_words_only_in_a_field_the_model_typed_into_are_no_evidence() -> None:
    seen, b = web(), Browser()
    b.go(APP + "auth/login")
    page = (
        "### Result\nFound 1 match:\n\n- generic [ref=e1]:\n  - text: Username\n"
        '  - textbox "Username" [ref=e3]: No user with that name.\n'
        '  - textbox "Say \\"hi\\": x" [active] [ref=e4]: line one line two\n'
        '  - heading "Log In" [level=1] [ref=e6]'
    )
    before = b("browser_find", page)
    assert seen.typed([(before, "No user with that name.")], b.calls) == []  # the app's own
    b("browser_press_key", "", key="N")  # a key at a time is typing too
    found = b("browser_find", page)
    assert seen.typed(
        [(found, "No user with that name."), (found, "line one line two")], b.calls
    ) == [
        "the quote 'No user with that name.' from mcp__browser__browser_find (toolu_3, round 3) "
        "is what a form field holds, and you typed into this browser's fields: quote what the app "
        "shows, not an input",
        "the quote 'line one line two' from mcp__browser__browser_find (toolu_3, round 3) is what "
        "a form field holds, and you typed into this browser's fields: quote what the app shows, "
        "not an input",
    ]
    assert seen.typed([(found, 'heading "Log In"'), (found, "Username")], b.calls) == []
    assert seen.typed([(b("read_file", "x"), "x")], b.calls) == []  # not a browser's


def test_a_tab_switch_names_the_current_tab_only_when_its_line_is_plain() -> None:
    seen, b = web(), Browser()
    b.go("data:text/html,hello")
    plain = "### Result\n- 0: (current) [Posts (3)](http://localhost:5000/)\n- 1: [](data:x)"
    b("browser_tabs", plain, action="select", index=0)
    assert seen.observed(b("browser_find", FOUND), b.calls)
    for hostile in (
        "- 0: [](http://localhost:5000/)\n- 1: (current) [x](http://localhost:5000/) y](data:,z)",
        "- 0: [](http://localhost:5000/)\n- 1: (current) [](data:text/html,](http://localhost:5000/)",
        "- 0: (current) [](http://localhost:5000/) [isolatedContext: a]",
    ):  # a title or a URL holding `](`, or a tab Playwright marks otherwise: not believed
        b.go(APP)
        b("browser_tabs", "### Result\n" + hostile, action="select", index=1)
        assert not seen.observed(b("browser_find", FOUND), b.calls), hostile


def test_with_a_browser_for_a_web_app_the_apps_log_is_no_page() -> None:
    b = Browser()
    started = b("start_app", f"It answers at {APP}. First output:\nNo posts yet.")
    assert web().refusal(started, b.calls) == (
        "start_app shows the app's log, not its pages: look at the page in the browser "
        "(mcp__browser__…, mcp__other__…)"
    )
    assert web().watches(started)  # what it shows going wrong still counts
    assert web(app_url=None).observed(started, b.calls)  # not a web app: its output is all
    assert Witnesses.of({}, app_command=True, app_url=APP).observed(started)  # no browser
