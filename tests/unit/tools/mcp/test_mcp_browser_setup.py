"""What a browser server's set-up needs from the hub and from `cardrunner check`.

The hub offers only the tools a server's `tools` lists (each definition goes with every request)
and fills `${CARDRUNNER_RUN_DIR}` in its arguments with the run's folder (so a browser's files
go there, not into the work tree); tried against our real test server. `server_problems` says
what a stdio server lacks before a run would find out, with how to install it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cardrunner.config.settingsfiles import McpServer
from cardrunner.processes.groups import ProcessGroups
from cardrunner.tools.mcp.hub import McpHub
from cardrunner.tools.mcp.readiness import server_problems
from tests.support.mcp_harness import TEST_SERVER, server_spec


async def test_only_the_listed_tools_are_offered_and_a_missing_one_is_named(tmp_path: Path) -> None:
    spec = server_spec().model_copy(update={"tools": ["echo", "add", "no_such_tool"]})
    async with McpHub({"t": spec}, tmp_path / "run", tmp_path, groups=ProcessGroups()) as hub:
        names = sorted(t.name for t in hub.tools())
        assert (await hub.call("t", "echo", {"text": "hi"})).text == "hi"
    assert names == ["mcp__t__add", "mcp__t__echo"]
    assert hub.warnings == ["MCP server 't' has no tool 'no_such_tool' (listed in its `tools`)"]


async def test_the_run_folder_is_filled_into_a_servers_arguments(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    spec = McpServer(
        command=sys.executable,
        args=[str(TEST_SERVER), "--output-dir", "${CARDRUNNER_RUN_DIR}/browser"],
        source="cardrunner.toml",  # a repository's server
    )
    async with McpHub({"t": spec}, run_dir, tmp_path, groups=ProcessGroups()) as hub:
        assert hub.failures == {}
        pid = hub.pids()["t"]
        with open(f"/proc/{pid}/cmdline", "rb") as f:  # noqa: ASYNC230 (procfs: instant)
            argv = f.read().split(b"\0")
    assert argv[-3:] == [b"--output-dir", f"{run_dir}/browser".encode(), b""], argv


async def test_a_browser_server_runs_in_its_own_folder_of_the_run(tmp_path: Path) -> None:
    """A file name the model gives a browser resolves against its cwd: never the work tree.
    A file of the tree its args name by a relative path is passed by its full path."""
    run_dir, tree = tmp_path / "run", tmp_path / "tree"
    (tree / "pw").mkdir(parents=True)
    (tree / "pw" / "config.json").write_text("{}")
    args = [str(TEST_SERVER), "pw/config.json", "--config=pw/config.json", "--x=missing.json"]
    browser = McpServer(command=sys.executable, args=args, source="cardrunner.toml")
    other = McpServer(command=sys.executable, args=args[:2], source="cardrunner.toml")
    servers = {"browser": browser, "git": other}
    async with McpHub(servers, run_dir, tree, groups=ProcessGroups()) as hub:
        assert hub.failures == {}
        pids = hub.pids()
        cwd = {name: Path(os.readlink(f"/proc/{pid}/cwd")) for name, pid in pids.items()}
        with open(f"/proc/{pids['browser']}/cmdline", "rb") as f:  # noqa: ASYNC230 (procfs)
            argv = f.read().decode().split("\0")
    assert cwd == {"browser": (run_dir / "mcp" / "browser").resolve(), "git": tree.resolve()}
    named = str(tree / "pw" / "config.json")
    assert argv[-4:] == [named, f"--config={named}", "--x=missing.json", ""], argv


def _browser(tmp_path: Path, command: str, *args: str) -> list[str]:
    spec = McpServer(command=command, args=list(args))
    return server_problems("browser", spec, tmp_path, "/usr/bin:/bin", network=False)


GOOD = ["--headless", "--output-dir", "${CARDRUNNER_RUN_DIR}/browser"]


def test_npx_cannot_start_without_the_network_and_the_fix_is_named(tmp_path: Path) -> None:
    (problem,) = _browser(tmp_path, "npx", "@playwright/mcp@latest")
    assert "npx asks the registry for the server when it starts" in problem
    assert "npm install --save-dev @playwright/mcp@0.0.86" in problem
    assert "node_modules/.bin/playwright-mcp" in problem


def test_a_missing_program_says_how_to_install_it(tmp_path: Path) -> None:
    (problem,) = _browser(tmp_path, "node_modules/.bin/playwright-mcp", *GOOD)
    assert "is not found; install it (npm install --save-dev @playwright/mcp@0.0.86)" in problem


def test_no_browser_no_headless_and_files_in_the_work_tree_are_each_said(tmp_path: Path) -> None:
    program = tmp_path / "node_modules/.bin/playwright-mcp"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    missing = tmp_path / "no-chromium"
    said = _browser(tmp_path, "node_modules/.bin/playwright-mcp", "--executable-path", str(missing))
    assert len(said) == 3, said
    assert f"no browser at {str(missing)!r}; install the distribution's chromium" in said[0]
    assert 'add "--headless"' in said[1]
    assert '"--output-dir", "${CARDRUNNER_RUN_DIR}/browser"' in said[2]
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    ok = [*GOOD, "--executable-path", str(chromium)]
    assert _browser(tmp_path, "node_modules/.bin/playwright-mcp", *ok) == []


@pytest.mark.parametrize("network", [True, False])
def test_other_servers_are_only_checked_for_their_program(tmp_path: Path, network: bool) -> None:
    spec = McpServer(command="python", args=["-m", "mcp_server_git"])
    path = str(Path(sys.executable).parent)
    assert server_problems("git", spec, tmp_path, path, network) == []


def test_console_entries_in_the_run_folder_are_shown_in_the_result(tmp_path: Path) -> None:
    import mcp_types as types

    from cardrunner.tools.mcp.results import ResultConverter

    run_dir = tmp_path / "run"
    (run_dir / "browser").mkdir(parents=True)
    log = run_dir / "browser" / "console-1.log"
    log.write_text(
        "[     117ms] [ERROR] Failed to load resource: 404 @ http://localhost:5000/x.js:1\n"
        "[     300ms] [ERROR] Uncaught TypeError: boom @ http://localhost:5000/app.js:7\n"
    )
    (tmp_path / "elsewhere.log").write_text("[1ms] [ERROR] not the run's\n")
    text = (
        "### Page\n- Console: 2 errors, 0 warnings\n### Events\n"
        "- New console entries: .cardrunner/runs/r/browser/console-1.log#L2\n"
        "- New console entries: ../elsewhere.log#L1\n"
        "- New console entries: *.log#L1"
    )
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    shown = ResultConverter(run_dir, tmp_path).convert("browser", "browser_click", result).text
    assert "- New console entries:\n- [ERROR] Uncaught TypeError: boom" in shown
    assert "Failed to load resource" not in shown  # before line 2: shown with an earlier call
    assert "- New console entries: ../elsewhere.log#L1" in shown  # not in the run's folder
    assert "- New console entries: *.log#L1" in shown


@pytest.mark.parametrize(
    ("arguments", "said", "shown"),
    [
        ({"text": "No posts yet."}, 'No matches found for "No posts yet.".', "No matches found."),
        (
            {"text": "No posts"},
            'Found 1 match for "No posts":\n\n- paragraph [ref=e13]: No posts yet.',
            "Found 1 match:\n\n- paragraph [ref=e13]: No posts yet.",
        ),
        (
            {"regex": "a/No posts yet./"},
            "Found 2 matches for /a\\/No posts yet.\\// (showing first 1):\n- heading: Posts",
            "Found 2 matches (showing first 1):\n- heading: Posts",
        ),
    ],
)
def test_browser_find_answers_without_the_words_it_was_asked_for(
    tmp_path: Path, arguments: dict[str, str], said: str, shown: str
) -> None:
    import mcp_types as types

    from cardrunner.tools.mcp.results import ResultConverter

    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=f"### Result\n{said}")]
    )
    converted = ResultConverter(tmp_path, tmp_path).convert("b", "browser_find", result, arguments)
    assert converted.text == f"### Result\n{shown}"
