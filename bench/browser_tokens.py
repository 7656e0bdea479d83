"""Input tokens to verify a browser-only criterion: cardrunner's set-up against Playwright MCP's
default snapshot flow, on the same page of the same real app, side by side.

flaskr (Flask's tutorial app, from PyPI's Flask sdist: tests/support/webapp.py) is started once.
Each set-up runs the same one-criterion card ("logging in with a user name that does not exist
shows 'Incorrect username.'") through cardrunner's real loop, with the real Playwright MCP
(npm @playwright/mcp 0.0.86) on the distribution's chromium in the run's sandbox; only the
model's decisions are scripted, each set-up's the way its tools lead a model:

- default: the server as Playwright's README starts it (every tool, default options): navigate,
  take a snapshot to see the page and its refs, fill the form, click, take a snapshot to see the
  answer, report citing it.
- cardrunner: docs/webapp.md's set-up (six tools, `--snapshot-mode none`, `--codegen none`):
  navigate, fill the form, click, find the words on the page (`browser_find`), report citing it.

Billed-input-equivalent tokens = input + 0.1 × cache_read + 1.25 × cache_write per request
(the prompt cache simulated as the API does it, the same simulation for both), summed. Printed
beside it: the prompt tokens with caching aside, and the browser's own share of them (its tool
definitions and its calls and results in each request; cardrunner's own prompt and tools are the
same in both set-ups). The app serves both runs from the host, so the sandbox's network is open
here; what the browser returns does not depend on it.

    .venv/bin/python bench/browser_tokens.py
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

from _common import header, verdict

TARGET = 0.3
URL = "http://localhost:{port}/auth/login"
SAYS = "Incorrect username."
FIELDS = [
    {"name": "Username", "type": "textbox", "target": "#username", "value": "nobody"},
    {"name": "Password", "type": "textbox", "target": "#password", "value": "secret"},
]
DEFAULT_ARGS = [
    "--headless",
    "--isolated",
    "--executable-path",
    "/usr/bin/chromium",
    "--no-sandbox",
]
"""Playwright's README config (`npx @playwright/mcp@latest`), on this machine's chromium: a run
has no display and chromium's own sandbox cannot nest in ours."""


@dataclass
class Setup:
    case: str
    name: str
    toml: str
    steps: list[dict[str, Any]]
    card: str
    uncut: bool = False
    """Results reach the model whole, as most MCP clients pass them (cardrunner cuts every tool
    result at 4,000 characters, which would hide the long page's post from the default flow)."""


POSTS = 150
"""Posts on the long page: flaskr's index then snapshots at ~{size} (the issue's pages: 50-540 KB)."""
RELEASE = "Release notes for 1.0"
BODY = "We fixed the things you told us about, and a few you did not. " * 3


def _card(criterion: str) -> str:
    return f"---\ntitle: Seen in the browser\nstate: New\n---\n## Acceptance criteria\n\n- {criterion}\n"


def setups(port: int) -> list[Setup]:
    from tests.support.project import final, report, turn
    from tests.support.webapp import TOML, browser

    end = final("Verified in the browser.\nRESULT: failed: bench")
    ours = TOML[TOML.index("[mcp.browser]") :].replace(":5000/", f":{port}/")  # its origin
    ours_toml = "[sandbox]\nnetwork = true\n\n" + ours
    default_toml = (
        "[sandbox]\nnetwork = true\n\n[mcp.browser]\n"
        'command = "node_modules/.bin/playwright-mcp"\n'
        f"args = {json.dumps(DEFAULT_ARGS)}\ntimeout = 60\n"
    )
    login, index = URL.format(port=port), f"http://localhost:{port}/"
    fill = browser("browser_fill_form", fields=FIELDS)
    click = browser("browser_click", target="input[type=submit]", element="Log In")

    def said(quote: str) -> dict[str, Any]:
        return {**turn(report(0, "the page says so", ("toolu_seen", quote))), "expect": [quote]}

    form = _card(f'Logging in with a user name that does not exist shows "{SAYS}"')
    posts = _card(f'The posts page lists the post "{RELEASE}".')
    return [
        Setup("login form", "default", default_toml, [
            turn(browser("browser_navigate", url=login)),
            turn(browser("browser_snapshot", "toolu_page")),
            turn(fill), turn(click),
            turn(browser("browser_snapshot", "toolu_seen")),
            said(SAYS), end,
        ], form),
        Setup("login form", "cardrunner", ours_toml, [
            turn(browser("browser_navigate", url=login)),
            turn(fill), turn(click),
            turn(browser("browser_find", "toolu_seen", text=SAYS)),
            said(SAYS), end,
        ], form),
        Setup(f"posts page, {POSTS} posts", "default", default_toml, [
            turn(browser("browser_navigate", url=index)),
            turn(browser("browser_snapshot", "toolu_seen")),
            said(RELEASE), end,
        ], posts, uncut=True),
        Setup(f"posts page, {POSTS} posts", "cardrunner", ours_toml, [
            turn(browser("browser_navigate", url=index)),
            turn(browser("browser_find", "toolu_seen", text=RELEASE)),
            said(RELEASE), end,
        ], posts),
    ]  # fmt: skip


def _browser_share(body: dict[str, Any]) -> dict[str, Any]:
    """The request without the browser: its tool definitions, calls and their results."""
    ids: set[str] = set()
    messages = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            kept = []
            for block in content:
                if block.get("type") == "tool_use" and block["name"].startswith("mcp__browser"):
                    ids.add(block["id"])
                elif block.get("type") != "tool_result" or block["tool_use_id"] not in ids:
                    kept.append(block)
            content = kept
        messages.append({**message, "content": content})
    tools = [t for t in body.get("tools", []) if not t["name"].startswith("mcp__browser")]
    return {**body, "tools": tools, "messages": messages}


async def play(setup: Setup, folder: Path, modules: Path) -> dict[str, float]:
    """Run `setup`'s card in the fresh repository `folder`; its token figures."""
    from cardrunner.agent import toolpool
    from cardrunner.agent.events import RunFinished
    from cardrunner.agent.review import AutoApprover
    from cardrunner.apirules.promptcache import PromptCache
    from cardrunner.config.loading import load_settings
    from cardrunner.models.scripted import ScriptedModel
    from cardrunner.run.options import RunOptions
    from cardrunner.run.session import run_card
    from tests.support.ecosystems import _link_tree
    from tests.support.project import init_repo

    root = folder
    (root / "cards").mkdir(parents=True)
    (root / "cards" / "login.md").write_text(setup.card)
    (root / "cardrunner.toml").write_text(setup.toml)
    (root / ".gitignore").write_text("node_modules/\n")
    _link_tree(modules / "node_modules", root / "node_modules")
    init_repo(root, "a card")
    settings, problems = load_settings(root)
    assert not problems, problems
    model = ScriptedModel(setup.steps)
    options = RunOptions(
        root=root, card_path=root / "cards/login.md", settings=settings, model=model,
        approver=AutoApprover(),
    )  # fmt: skip
    with (
        patch.object(toolpool, "truncate", lambda text, limit=0: text)
        if setup.uncut
        else nullcontext()
    ):
        last = [e async for e in run_card(options)][-1]
    assert isinstance(last, RunFinished)
    if len(model.requests) != len(setup.steps) or "code no longer fits" in last.final_text:
        print(f"   {setup.name}: the browser did not show what the steps expect: {last.final_text}")
        raise SystemExit(2)  # the `expect`s: the browser showed the words both flows cite
    cache, without = PromptCache(), PromptCache()
    billed = rest = prompt = browser = 0.0
    for body in model.requests:
        billed += _billed(cache, body)
        rest += _billed(without, _browser_share(body))
        prompt += cache.count(body)
        browser += cache.count(body) - cache.count(_browser_share(body))
    tools = [t for t in model.requests[0].get("tools", []) if t["name"].startswith("mcp__browser")]
    return {
        "rounds": len(model.requests),
        "billed": billed,
        "browser_billed": billed - rest,
        "snapshot": max(
            (len(json.dumps(b["messages"][-1]["content"])) for b in model.requests[1:]), default=0
        ),
        "prompt": prompt,
        "browser": browser,
        "tools": len(tools),
        "tool_tokens": sum(cache.count({"tools": [t]}) for t in tools),
    }


def _billed(cache: Any, body: dict[str, Any]) -> float:
    used = cache.measure(body)
    return float(
        used.input_tokens
        + 0.1 * used.cache_read_input_tokens
        + 1.25 * used.cache_creation_input_tokens
    )


def _seed(root: Path) -> None:
    """A blog with history: one author, POSTS posts, the release notes among the older ones."""
    import sqlite3

    db = sqlite3.connect(root / "instance" / "flaskr.sqlite")
    with db:
        db.execute("INSERT INTO user (username, password) VALUES ('ada', 'x')")
        titles = [f"Week {n} in review" for n in range(POSTS)]
        titles[POSTS // 3] = RELEASE
        db.executemany(
            "INSERT INTO post (author_id, title, body) VALUES (1, ?, ?)",
            [(title, BODY) for title in titles],
        )
    db.close()


def _serve(app: Any) -> subprocess.Popen[bytes]:
    """flaskr on the host, a fresh database; returns once it answers (or exits 2)."""
    python = app.python
    subprocess.run([python, "-m", "flask", "--app", "flaskr", "init-db"], cwd=app.root, check=True)
    _seed(app.root)
    argv = [python, "-m", "flask", "--app", "flaskr", "run", "--port", str(app.port)]
    server = subprocess.Popen(argv, cwd=app.root, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", app.port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    print("   flaskr did not answer within 30 s")
    raise SystemExit(2)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    import os

    from tests.support.webapp import make_webapp, playwright_mcp

    os.environ.setdefault("CARDRUNNER_TRUST", "1")  # the bench's own repositories
    header("browser_tokens: verify a browser-only criterion, cardrunner's set-up vs the default")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        app = make_webapp(folder / "flaskr", _port())
        modules = playwright_mcp()
        server = _serve(app)
        try:
            results = [
                (s, asyncio.run(play(s, folder / f"run-{i}", modules)))
                for i, s in enumerate(setups(app.port))
            ]
        finally:
            server.kill()
            server.wait()
    skill = modules / "node_modules/playwright-core/lib/tools/skills/playwright-cli/SKILL.md"
    if skill.is_file():
        from cardrunner.apirules.promptcache import estimate_tokens

        text = skill.read_text(encoding="utf-8")
        print(
            f"   playwright-cli's SKILL.md (what an agent with a shell loads to use the CLI): "
            f"{len(text):,} characters, ~{estimate_tokens(text):,} tokens by the same count"
        )
    for case in dict.fromkeys(s.case for s, _ in results):
        print(f"   -- {case}")
        pair = {s.name: r for s, r in results if s.case == case}
        for name, r in pair.items():
            print(
                f"   {name:<10} rounds {r['rounds']:>2}   browser tools {r['tools']:>2} "
                f"({r['tool_tokens']:>5,.0f} tok)   largest result {r['snapshot']:>7,} chars   "
                f"billed-equivalent {r['billed']:>8,.0f}, the browser's {r['browser_billed']:>7,.0f}"
            )
        ours, default = pair["cardrunner"], pair["default"]
        ratio = ours["browser_billed"] / default["browser_billed"]
        whole = ours["billed"] / default["billed"]
        print(
            f"RATIO {case}: the browser's billed input cardrunner/default {ratio:.3f}× ({verdict(ratio, TARGET)})"
        )
        print(
            f"RATIO {case}: the whole run's billed input cardrunner/default {whole:.3f}× (no target)"
        )
        if ratio > TARGET:
            print(
                f"   why: the browser's tool definitions ({ours['tool_tokens']:,.0f} tokens) in every request"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
