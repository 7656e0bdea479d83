"""The language server killed with SIGKILL at a random round, ten times: its worker ends the run
`interrupted` (nothing left running), the card shows as interrupted in the next server, its
Resume lens continues the run from the log, and the final diff on the user's branch is the one
an uninterrupted run makes. Nothing is left running."""

from __future__ import annotations

import asyncio
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault
from tests.reliability.test_kill_resume import (
    fresh_ids,
    git_diff_of_fix,
    processes_under,
    tool_lines,
)
from tests.support.processes import alive, children
from tests.support.project import FIXED, fix_transcript, git, make_project

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from _lsp import LspProcess

KILLS = 10
pytestmark = pytest.mark.timeout(3600)
"""Ten kills, each followed by a second server: every run now starts its own worker process
(which imports the SDK, ~2 s on this machine), half of them in a fresh worktree, and the killed
server's worker ends its run before the next server starts; a run takes one to three minutes on a
loaded machine, so the default 300 s per test is far too short."""
WAIT = 480
"""For the rounds before a kill and for a resumed run: the runner's baseline and each pytest
take over a minute each on a machine the rest of the suite keeps busy (seen at load 15 on 2
cores); only a run that is stuck waits this long."""


async def serve(root: Path, api: FakeMessagesAPI) -> LspProcess:
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-test",
    }
    server = LspProcess([sys.executable, "-m", "cardrunner", "lsp"], cwd=root, env=env)
    await server.spawn()
    await server.initialize(root)
    return server


async def until(predicate: Any, within: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.02)


def state(card: Path) -> str:
    return str(yaml.safe_load(card.read_text().split("---")[1])["state"])


async def accept_reviews(server: LspProcess, uri: str) -> None:
    """Be the user: accept every review the server asks for (the question is answered null)."""
    seen = 0
    while True:
        item = await server.wait_for(lambda r: r.method == "cardrunner/reviewRequested", 120, seen)
        seen = server.received.index(item) + 1
        await server.request(
            "workspace/executeCommand", {"command": "cardrunner.acceptChanges", "arguments": [uri]}
        )


async def test_sigkill_of_the_language_server_then_resume_in_the_next(tmp_path: Path) -> None:
    steps = fix_transcript()
    calls_per_round = [sum(b["type"] == "tool_use" for b in s["content"]) for s in steps]
    rng = random.Random(1129)
    for attempt in range(KILLS):
        root = tmp_path / f"k{attempt}"
        # in a worktree of its own, and in the checkout every other time: either way the
        # killed server's card commit moves HEAD before the resume, and the evidence holds
        card = make_project(root, top_toml="" if attempt % 2 else "isolation = false\n")
        uri = card.as_uri()
        start = git(root, "rev-parse", "HEAD").strip()
        kill_after = rng.randint(1, len(steps) - 2)
        async with FakeMessagesAPI([Fault.delay(0.3, then=s) for s in steps]) as api:
            server = await serve(root, api)
            reviewer = asyncio.create_task(accept_reviews(server, uri))
            await server.request(
                "workspace/executeCommand", {"command": "cardrunner.runCard", "arguments": [uri]}
            )
            done_calls = sum(calls_per_round[:kill_after])
            await until(lambda r=root, n=done_calls: tool_lines(r) >= n, WAIT, "rounds")
            assert server.proc is not None
            workers = children(server.proc.pid)  # a spare's argv does not name the workspace
            assert workers, "the run goes on in a worker of the server"
            server.proc.kill()
            await server.proc.wait()
            reviewer.cancel()
            assert not api.violations
        # Its worker sees the pipe close and ends the run itself, resumable, on disk (it removes
        # the worktree and commits the card; seen to take over 30 s on a loaded machine). Its
        # builds are gone before it has written the card: the worker itself must be waited for.
        await until(
            lambda r=root, w=workers: not processes_under(r) and not any(map(alive, w)),
            120,
            "the worker to end the run",
        )
        assert state(card) == "Failed"
        assert yaml.safe_load(card.read_text().split("---")[1])["reason"] == "interrupted"
        async with FakeMessagesAPI(fresh_ids(steps[kill_after:]), check_history=False) as api:
            server = await serve(root, api)
            reviewer = asyncio.create_task(accept_reviews(server, uri))
            try:
                interrupted = await server.wait_for(
                    lambda r, u=uri: (
                        r.method == "textDocument/publishDiagnostics"
                        and r.params["uri"] == u
                        and any("interrupted" in d["message"] for d in r.params["diagnostics"])
                    ),
                    60,
                )
                assert interrupted
                lenses = await server.request(
                    "textDocument/codeLens", {"textDocument": {"uri": uri}}
                )
                resume = next(
                    lens["command"] for lens in lenses if lens["command"]["title"] == "Resume"
                )
                await server.request(
                    "workspace/executeCommand",
                    {"command": resume["command"], "arguments": resume["arguments"]},
                )
                await until(
                    lambda c=card: state(c) == "Done",
                    WAIT,  # a whole run again
                    f"the resumed run (killed after {kill_after})",
                )
                api.assert_complete()
            finally:
                reviewer.cancel()
                await server.close()
        assert git(root, "diff", start, "HEAD", "--", "src") == git_diff_of_fix(root, start)
        assert (root / "src/calc.py").read_text() == FIXED
        last = yaml.safe_load(card.read_text().split("---")[1])["last_run"]
        assert last["result"] == "done"
        await until(lambda r=root: not processes_under(r), 15, "processes of the run to end")
