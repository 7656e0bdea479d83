"""A small MCP server that answers like Playwright MCP (0.0.86), for the evidence tests.

Run as a program it serves `browser_navigate`, `browser_snapshot`, `browser_console_messages`
and `browser_take_screenshot` over stdio. A "page" is what the project's own `web/app.py` renders
for a path (`render(path) -> (title, text, console_errors)`), run fresh in a subprocess for each
call in the project's folder, so the page is always the code as it is now — as a browser shows
the running app. The texts copy Playwright MCP's own format (its `response.ts`, `console.ts`):
`### Page` with `- Page URL:`, `- Page Title:` and `- Console: N errors, M warnings`, a
`### Snapshot` in YAML, and `[ERROR] text @ url:line` console lines; a screenshot is a PNG
image content. A `file://` URL is "opened" as the file itself, as a real browser would.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import mcp_types as types
from mcp.server import MCPServer

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
"""The project: named in the server's args (`"."`; a browser server runs in a folder of the
run's, and the hub passes a relative path to a file of the tree as its full path)."""


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


_PNG = b"\x89PNG\r\n\x1a\n" + b"".join(
    [
        _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)),
        _chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")),
        _chunk(b"IEND", b""),
    ]
)
"""A valid 1x1 PNG: the "screenshot"."""
server = MCPServer("fake-playwright")
_state = {"url": "about:blank"}
_logs: list[Path] = []


def _page(url: str) -> tuple[str, str, list[str]]:
    if url.startswith("file://"):
        path = Path(url.removeprefix("file://"))
        return path.name, path.read_text(encoding="utf-8"), []
    path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url
    code = (
        "import json, sys; sys.path.insert(0, 'web'); import app; "
        f"print(json.dumps(app.render({path!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    title, text, errors = json.loads(out.stdout)
    return title, text, errors


def _response(code: str) -> str:
    title, text, errors = _page(_state["url"])
    page = [f"- Page URL: {_state['url']}", f"- Page Title: {title}"]
    if errors:  # the count since the page opened, and a link to the new entries, as Playwright
        page.append(f"- Console: {len(errors)} errors, 0 warnings")
        log = Path(os.environ.get("CARDRUNNER_RUN_DIR", ".")) / f"console-{len(_logs)}.log"
        log.write_text("".join(f"[ERROR] {e} @ {_state['url']}:3\n" for e in errors), "utf-8")
        _logs.append(log)
        page.append(f"- New console entries: {log}#L1")
    snapshot = "\n".join(
        f"- paragraph [ref=e{i + 2}]: {line}" for i, line in enumerate(text.splitlines())
    )
    return (
        f"### Ran Playwright code\n```js\n{code}\n```\n### Page\n" + "\n".join(page)
        + f"\n### Snapshot\n```yaml\n{snapshot}\n```\n"
    )  # fmt: skip


@server.tool()
def browser_navigate(url: str) -> str:
    """Navigate to a URL."""
    _state["url"] = url
    return _response(f"await page.goto({json.dumps(url)});")


@server.tool()
def browser_snapshot() -> str:
    """Capture the accessibility snapshot of the current page."""
    return _response("// snapshot")


@server.tool()
def browser_console_messages(level: str = "info") -> str:
    """Returns all console messages."""
    _, _, errors = _page(_state["url"])
    lines = [f"[ERROR] {e} @ {_state['url']}static/app.js:3" for e in errors]
    head = f"Total messages: {len(errors)} (Errors: {len(errors)}, Warnings: 0)"
    return "### Result\n" + "\n".join([head, "", *lines])


@server.tool()
def browser_take_screenshot() -> list[types.TextContent | types.ImageContent]:
    """Take a screenshot of the current page."""
    data = base64.b64encode(_PNG).decode("ascii")
    text = "### Result\n- [Screenshot of viewport](page-1.png)\n"
    return [
        types.TextContent(type="text", text=text),
        types.ImageContent(type="image", data=data, mime_type="image/png"),
    ]


if __name__ == "__main__":
    server.run("stdio")
