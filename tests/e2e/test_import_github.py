"""`cardrunner import github` against a local fake of GitHub's REST API: pagination, rate-limit
answers, and an import run twice that creates nothing new."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cardrunner.board.prbody import RunReport, pr_body
from cardrunner.card.card import load_card
from cardrunner.record.state import RunState
from tests.support.fakegithub import FakeGitHub, serving
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


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    """Two issues a page; page 2 is rate limited once (403, remaining 0, reset now); issue 9
    answers a long rate limit."""
    fake = FakeGitHub(
        {"/repos/o/r/issues": ISSUES},
        refusals={"/repos/o/r/issues/9": (429, {"message": "slow down"}, {"Retry-After": "3600"})},
        limit_once={"/repos/o/r/issues"},
    )
    with serving(fake):
        yield fake


def env(fake: FakeGitHub) -> dict[str, str]:
    return fake.env()


def test_open_issues_become_cards_once(tmp_path: Path, github: FakeGitHub) -> None:
    make_project(tmp_path)
    proc = cli(tmp_path, "import", "github", "o/r", "--all-open", env=env(github))
    assert proc.returncode == 0, proc.stderr
    assert "waited 1 s for GitHub's rate limit" in proc.stderr
    assert "issue #4 not imported: no task list or acceptance criteria" in proc.stderr
    assert "3 new card(s); 0 issue(s) already imported; 1 left out" in proc.stdout
    pages = [path for path, _ in github.seen]
    assert len(pages) == 4 and pages[1] == pages[2]  # three pages, the second asked twice
    assert all("state=open" in page for page in pages)
    assert {auth for _, auth in github.seen} == {"Bearer ghp-test"}

    greeting = load_card(tmp_path / "cards" / "1-greeting-say-hello.md")
    assert greeting.title == "Greeting: say hello" and greeting.state == "New"
    assert greeting.criteria == ["It says hello", "It names the user"]
    assert greeting.description == (  # whose words, then the words as a quote
        "Issue #1 by @unknown (author_association unknown), as it was on an unknown time: "
        "the author's words, quoted as data.\n\n> Greet the user."
    )
    assert greeting.source == "https://github.example/o/r/issues/1"
    totals = load_card(tmp_path / "cards" / "3-totals.md")
    assert (
        totals.criteria == ["The total includes tax."]
        and totals.description.splitlines()[-1] == "> Totals are off."
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
    view = RunState(path, "run-1", "T", state="done", round=1)
    report = RunReport(load_card(path), "c.md", view, "cards/c", "m", "log", "origin")
    assert pr_body(report).endswith("\nFixes #42\n")
    path.write_text(path.read_text().replace("source: https://github.com/o/r/issues/42\n", ""))
    report = RunReport(load_card(path), "c.md", view, "cards/c", "m", "log", "origin")
    assert "Fixes" not in pr_body(report)
