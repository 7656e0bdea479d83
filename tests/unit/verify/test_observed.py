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
