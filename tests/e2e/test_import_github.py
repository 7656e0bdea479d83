"""`cardrunner import github` against a local fake of GitHub's REST API: pagination, rate-limit
answers, and an import run twice that creates nothing new."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from cardrunner.card.card import load_card
from cardrunner.run.prbody import RunReport, pr_body
from cardrunner.run.view import RunView
from tests.support.project import cli, make_project

TASKS = "Greet the user.\r\n\r\n- [ ] It says hello\r\n- [x] It names the user\r\n"
SECTION = "Totals are off.\n\n## Acceptance criteria\n\n- The total includes tax.\n"


def issue(number: int, title: str, body: str | None, **extra: Any) -> dict[str, Any]:
    url = f"https://github.example/o/r/issues/{number}"
    return {"number": number, "title": title, "body": body, "html_url": url, **extra}


ISSUES = [
    issue(1, "Greeting: say hello", TASKS),
    issue(2, "A pull request", "- [ ] x", pull_request={"url": "…"}),
    issue(3, "Totals", SECTION),
    issue(4, "Vague", "Make it better."),
    issue(5, 'Quote "this": and ---', "- [ ] It works"),
]


@dataclass
class FakeGitHub:
    """Two issues a page; page 2 is rate limited once (403, remaining 0, reset now)."""

    issues: list[dict[str, Any]]
    seen: list[tuple[str, str]] = field(default_factory=list)
    limited_once: bool = False
    url: str = ""

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(handler.path)
        query = parse_qs(parsed.query)
        self.seen.append((handler.path, handler.headers.get("Authorization", "")))
        if parsed.path == "/repos/o/r/issues/9":
            self.send(handler, 429, {"message": "slow down"}, {"Retry-After": "3600"})
            return
        if parsed.path != "/repos/o/r/issues" or query.get("state") != ["open"]:
            self.send(handler, 404, {"message": "Not Found"})
            return
        page = int(query.get("page", ["1"])[0])
        if page == 2 and not self.limited_once:
            self.limited_once = True
            headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()))}
            self.send(handler, 403, {"message": "API rate limit exceeded"}, headers)
            return
        chosen = self.issues[(page - 1) * 2 : page * 2]
        more = page * 2 < len(self.issues)
        link = f'<{self.url}/repos/o/r/issues?state=open&page={page + 1}>; rel="next"'
        self.send(handler, 200, chosen, {"Link": link} if more else {})

    def send(
        self,
        handler: BaseHTTPRequestHandler,
        code: int,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        handler.send_response(code)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(ISSUES)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.answer(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def env(fake: FakeGitHub) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.url, "GITHUB_TOKEN": "ghp-test", "GH_TOKEN": ""}


def test_open_issues_become_cards_once(tmp_path: Path, github: FakeGitHub) -> None:
    make_project(tmp_path)
    proc = cli(tmp_path, "import", "github", "o/r", "--all-open", env=env(github))
    assert proc.returncode == 0, proc.stderr
    assert "waited 1 s for GitHub's rate limit" in proc.stderr
    assert "issue #4 not imported: no task list or acceptance criteria" in proc.stderr
    assert "3 new card(s); 0 issue(s) already imported; 1 left out" in proc.stdout
    pages = [path for path, _ in github.seen]
    assert len(pages) == 4 and pages[1] == pages[2]  # three pages, the second asked twice
    assert {auth for _, auth in github.seen} == {"Bearer ghp-test"}

    greeting = load_card(tmp_path / "cards" / "1-greeting-say-hello.md")
    assert greeting.title == "Greeting: say hello" and greeting.state == "New"
    assert greeting.criteria == ["It says hello", "It names the user"]
    assert greeting.description == "Greet the user."
    assert greeting.source == "https://github.example/o/r/issues/1"
    totals = load_card(tmp_path / "cards" / "3-totals.md")
    assert (
        totals.criteria == ["The total includes tax."] and totals.description == "Totals are off."
    )
    quoted = load_card(tmp_path / "cards" / "5-quote-this-and.md")
    assert quoted.title == 'Quote "this": and ---' and quoted.criteria == ["It works"]
    check = cli(tmp_path, "check", "cards")
    assert check.returncode == 0, check.stdout

    before = sorted(p.name for p in (tmp_path / "cards").iterdir())
    (tmp_path / "cards" / "1-greeting-say-hello.md").rename(tmp_path / "cards" / "renamed.md")
    again = cli(tmp_path, "import", "github", "o/r", "--all-open", env=env(github))
    assert again.returncode == 0, again.stderr
    assert "0 new card(s); 3 issue(s) already imported; 1 left out" in again.stdout
    after = sorted(p.name for p in (tmp_path / "cards").iterdir())
    assert after == sorted(n if n != "1-greeting-say-hello.md" else "renamed.md" for n in before)


def test_a_planted_symlink_is_not_written_through(tmp_path: Path, github: FakeGitHub) -> None:
    make_project(tmp_path)
    marker = tmp_path.parent / f"{tmp_path.name}-marker"
    (tmp_path / "cards" / "1-greeting-say-hello.md").symlink_to(marker)
    proc = cli(tmp_path, "import", "github", "o/r", "--all-open", env=env(github))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert (
        load_card(tmp_path / "cards" / "1-greeting-say-hello-2.md").criteria[0] == "It says hello"
    )


def test_a_long_rate_limit_fails_clearly(tmp_path: Path, github: FakeGitHub) -> None:
    make_project(tmp_path)
    proc = cli(tmp_path, "import", "github", "o/r", "--number", "9", env=env(github))
    assert proc.returncode == 1
    assert "rate limit: try again in 3600 s (longer than the 60 s cardrunner waits)" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "cards").iterdir()) == ["fix-add.md"]


def test_a_refused_label_says_what_github_said(tmp_path: Path, github: FakeGitHub) -> None:
    make_project(tmp_path)
    bad = {**env(github), "GITHUB_API_URL": f"{github.url}/nowhere"}
    proc = cli(tmp_path, "import", "github", "o/r", "--label", "cards", env=bad)
    assert proc.returncode == 1 and "HTTP 404 Not Found" in proc.stderr, proc.stderr
    assert "labels=cards" in github.seen[0][0]


def test_the_cards_pull_request_fixes_its_issue(tmp_path: Path) -> None:
    path = tmp_path / "c.md"
    path.write_text(
        "---\ntitle: T\nsource: https://github.com/o/r/issues/42\n---\n## Acceptance criteria\n- x\n"
    )
    view = RunView(path, "run-1", "T", state="done", round=1)
    report = RunReport(load_card(path), "c.md", view, "cards/c", "m", "log", "origin")
    assert pr_body(report).endswith("\nFixes #42\n")
    path.write_text(path.read_text().replace("source: https://github.com/o/r/issues/42\n", ""))
    report = RunReport(load_card(path), "c.md", view, "cards/c", "m", "log", "origin")
    assert "Fixes" not in pr_body(report)
