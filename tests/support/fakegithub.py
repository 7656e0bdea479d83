"""A local fake of GitHub's REST API: JSON routes, paged listings, rate-limit answers.

`cardrunner import github` and `run --ci --from-review` read the REST API at `GITHUB_API_URL`;
tests point it here. A route whose value is a list is a listing, two items a page, followed
through `Link: <…>; rel="next"` as GitHub pages; page 2 of a listing in `limit_once` is first
answered by a rate limit (403, `x-ratelimit-remaining: 0`, reset now), as GitHub answers when
the hourly budget runs out. `refusals` answer a path with a fixed error; any other path is 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

PAGE = 2


@dataclass
class FakeGitHub:
    routes: dict[str, Any]
    refusals: dict[str, tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=dict)
    limit_once: set[str] = field(default_factory=set)
    seen: list[tuple[str, str]] = field(default_factory=list)
    """Every request: its path with the query, and its Authorization header."""
    url: str = ""
    _limited: set[str] = field(default_factory=set)

    def env(self) -> dict[str, str]:
        """The environment that points cardrunner here, with a token."""
        return {"GITHUB_API_URL": self.url, "GITHUB_TOKEN": "ghp-test", "GH_TOKEN": ""}

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(handler.path)
        query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        self.seen.append((handler.path, handler.headers.get("Authorization", "")))
        if parsed.path in self.refusals:
            send(handler, *self.refusals[parsed.path])
            return
        if parsed.path not in self.routes:
            send(handler, 404, {"message": "Not Found"})
            return
        value = self.routes[parsed.path]
        if not isinstance(value, list):
            send(handler, 200, value)
            return
        page = int(query.get("page", "1"))
        if page == 2 and parsed.path in self.limit_once and parsed.path not in self._limited:
            self._limited.add(parsed.path)
            headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()))}
            send(handler, 403, {"message": "API rate limit exceeded"}, headers)
            return
        more = page * PAGE < len(value)
        following = urlencode({**query, "page": str(page + 1)})
        link = {"Link": f'<{self.url}{parsed.path}?{following}>; rel="next"'} if more else {}
        send(handler, 200, value[(page - 1) * PAGE : page * PAGE], link)


def send(
    handler: BaseHTTPRequestHandler, code: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    handler.send_response(code)
    for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def serving(fake: FakeGitHub) -> Iterator[FakeGitHub]:
    """Serve `fake` on a free local port for the duration of the block."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.answer(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
