"""App criteria through the real loop: a browser server that answers in Playwright MCP's format.

A small web project in a real git repository; its "browser" is a real MCP server
(tests/support/fakebrowser.py) that renders the project's own code as a page and answers as
Playwright MCP 0.0.86 does. The runner's real tools, checks and commit; a scripted model.
What is checked: the template's words are no evidence for what the page shows, a console error
seen while verifying stops Done, a screenshot reaches the ledger and the review, a `(code)`
criterion may rest on the tests, and a criterion the model makes code-level needs a person.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Event, RunFinished, ToolFinished
from cardrunner.agent.review import Approver, AutoApprover, ReviewDecision, ScriptedApprover
from cardrunner.config.loading import load_settings
from cardrunner.models.scripted import ScriptedModel
from cardrunner.run.options import RunOptions
from cardrunner.run.session import RunSession
from tests.support.project import final, git, init_repo, report, turn, use
from tests.support.trust import TRUSTED

BROWSER = Path(__file__).resolve().parents[2] / "support" / "fakebrowser.py"
URL = "http://localhost:5000/"
WRONG = 'def render(path):\n    return "Todo", "Todo\\nTitle required", []\n'
NOISY = 'def render(path):\n    return "Todo", "Todo\\nPlease enter a title", ["TypeError: form is null"]\n'
RIGHT = 'def render(path):\n    return "Todo", "Todo\\nPlease enter a title", []\n'
CARD = """---
title: An empty title is refused with a message
state: New
---
**Acceptance criteria**

- Submitting an empty title shows "Please enter a title".
- The tests pass. (code)
"""
TOML = f"""model = "claude-sonnet-5-5"

[paths]
read = ["."]
write = ["web"]

[commands]
test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]

[mcp.playwright]
command = "{sys.executable}"
args = ["{BROWSER}", "."]
"""
TEST = "import sys\n\nsys.path.insert(0, 'web')\nimport app\n\n\ndef test_title():\n    assert app.render('/')[0] == 'Todo'\n"


def make_web(root: Path) -> Path:
    (root / "web").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "tests").mkdir()
    (root / "cards").mkdir()
    (root / "web" / "app.py").write_text(WRONG)
    (root / "templates" / "index.html").write_text("<p class=error>Please enter a title</p>\n")
    (root / "tests" / "test_app.py").write_text(TEST)
    (root / "cards" / "empty-title.md").write_text(CARD)
    (root / "cardrunner.toml").write_text(TOML)
    (root / ".gitignore").write_text("__pycache__/\n")
    init_repo(root)
    return root / "cards" / "empty-title.md"


async def play(
    root: Path, steps: list[dict[str, Any]], approver: Approver | None = None
) -> list[Event]:
    settings, problems = load_settings(root)
    assert not problems, problems
    options = RunOptions(
        root=root,
        card_path=root / "cards" / "empty-title.md",
        settings=settings,
        approver=approver or AutoApprover(),
        env=TRUSTED,
        model=ScriptedModel(steps),
    )
    return [e async for e in RunSession(options).events()]


def fix(content: str) -> list[dict[str, Any]]:
    return [
        turn(use("read_file", path="web/app.py")),
        turn(use("write_file", path="web/app.py", content=content)),
        turn(use("run_tests", "toolu_tests")),
    ]


COMMIT = turn(use("git_commit", message="card: An empty title is refused with a message\n\nx"))


def refusals(events: list[Event]) -> list[str]:
    return [
        e.result
        for e in events
        if isinstance(e, ToolFinished) and e.name == "report_criterion" and e.is_error
    ]


async def test_the_templates_words_are_not_what_the_page_shows(tmp_path: Path) -> None:
    make_web(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    steps = [
        *fix(WRONG.replace("Title required", "Title is required")),
        turn(
            use("mcp__playwright__browser_navigate", "toolu_nav", url=URL),
            report(1, "the page says it", ("toolu_nav", "Please enter a title")),
        ),
        turn(
            use("read_file", "toolu_tpl", path="templates/index.html"),
            report(1, "the template says it", ("toolu_tpl", "Please enter a title")),
        ),
        turn(
            use("mcp__playwright__browser_navigate", "toolu_file", url=f"file://{tmp_path}/templates/index.html"),
            report(1, "the file in the browser", ("toolu_file", "Please enter a title")),
        ),
        COMMIT,
        final(), final(), final(),
    ]  # fmt: skip
    events = await play(tmp_path, steps)
    first, second, third = refusals(events)
    assert "does not appear in the result" in first
    assert "read_file did not observe it" in second
    assert "saw file://" in third and "not the app" in third  # a file is the source again
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    assert result.commit is None
    assert git(tmp_path, "rev-list", f"{head}..HEAD", "--", "web") == ""


async def test_a_console_error_seen_while_verifying_stops_done(tmp_path: Path) -> None:
    make_web(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    steps = [
        *fix(NOISY),
        turn(
            use("mcp__playwright__browser_navigate", "toolu_nav", url=URL),
            report(1, "the page says it", ("toolu_nav", "Please enter a title")),
            report(2, "tests pass", ("toolu_tests", "1 passed")),
        ),
        COMMIT,
        final(), final(), final(),
    ]  # fmt: skip
    events = await play(tmp_path, steps)
    [refused] = refusals(events)
    assert "console error: TypeError: form is null" in refused  # the entry, as the browser said it
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    assert "console error" in result.detail
    assert result.commit is None and result.kept_branch
    assert git(tmp_path, "rev-list", f"{head}..HEAD", "--", "web") == ""
    assert (tmp_path / "web" / "app.py").read_text() == WRONG


async def test_the_right_fix_is_done_with_its_screenshot_in_the_review(tmp_path: Path) -> None:
    make_web(tmp_path)
    approver = AutoApprover()
    steps = [
        *fix(RIGHT),
        turn(
            use("mcp__playwright__browser_navigate", "toolu_nav", url=URL),
            use("mcp__playwright__browser_take_screenshot", "toolu_shot"),
            use("mcp__playwright__browser_console_messages", "toolu_console"),
            report(1, "the page says it", ("toolu_nav", "Please enter a title")),
            report(2, "tests pass", ("toolu_tests", "1 passed")),
        ),
        COMMIT,
        final(),
    ]
    events = await play(tmp_path, steps, approver)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    page, tests = result.ledger
    assert page.level == "app" and page.line().startswith("verified in the app")
    assert tests.level == "code" and tests.code_by == "card"
    [shot] = page.screenshots
    assert shot.endswith("toolu_shot-1.png") and (tmp_path / shot).read_bytes()[:4] == b"\x89PNG"
    assert tests.screenshots == []
    [request] = approver.requests
    assert request.proof[0].screenshots == (shot,) and request.proof[0].checked == "in the app"
    assert git(tmp_path, "show", "HEAD~1:web/app.py") == RIGHT


def code_only_steps() -> list[dict[str, Any]]:
    return [
        *fix(RIGHT),
        turn(
            use("read_file", "toolu_src", path="web/app.py"),
            use(
                "report_criterion",
                index=1,
                passed=True,
                evidence="render returns the message",
                cites=[{"call": "toolu_src", "quote": "Please enter a title"}],
                code_level="the browser is not available here",
            ),
            report(2, "tests pass", ("toolu_tests", "1 passed")),
        ),
        COMMIT,
        final(),
    ]


async def test_a_criterion_the_model_checks_in_the_code_needs_a_person(tmp_path: Path) -> None:
    make_web(tmp_path)
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    steps = [*code_only_steps(), final(), final()]
    events = await play(tmp_path, steps)  # --yes: nobody accepts it knowingly
    commits = [e for e in events if isinstance(e, ToolFinished) and e.name == "git_commit"]
    assert "checked in the code only" in commits[0].result and commits[0].is_error
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    assert result.ledger[0].code_by == "model"
    assert "NOT in the app" in result.ledger[0].line()
    assert git(tmp_path, "rev-list", f"{head}..HEAD", "--", "web") == ""  # the card's state only


async def test_a_person_who_accepts_it_knowingly_lets_it_end_done(tmp_path: Path) -> None:
    make_web(tmp_path)
    person = ScriptedApprover([ReviewDecision("accept", acknowledged=True)])
    events = await play(tmp_path, code_only_steps(), person)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "done", result
    [request] = person.requests
    assert any("checked in the code only, NOT in the running app" in w for w in request.warnings)
    assert request.proof[0].checked.startswith("in the code only, NOT in the app")
