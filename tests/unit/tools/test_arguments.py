"""run_tests arguments are data: selectors and allow-listed options, through real pytest runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.config.confinement import TestArgs
from cardrunner.config.settings import Commands
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.liveapp import AppProcess
from cardrunner.tools.commands import command_tools
from cardrunner.tools.guard import PathGuard

TESTS = "def test_ok():\n    assert True\n\n\ndef test_other():\n    assert True\n"


def pool(root: Path, commands: Commands | None = None) -> ToolPool:
    commands = commands or Commands(test=[sys.executable, "-m", "pytest", "-p", "no:cacheprovider"])
    guard = PathGuard(root, ["tests"], ["src"])
    return ToolPool(command_tools(root, commands, AppProcess(ProcessGroups()), guard=guard))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "tests" / "test_it.py").write_text(TESTS)
    (project / "secret.txt").write_text("not readable by the model\n")
    return project


CTX = ToolContext(round=1, emit=lambda event: None)


@pytest.mark.parametrize(
    "args",
    [
        ["--junitxml=ELSEWHERE/x.xml"],
        ["--junitxml", "ELSEWHERE/x.xml"],
        ["--basetemp=ELSEWHERE"],
        ["-o", "cache_dir=ELSEWHERE"],
        ["-p", "pytester"],
        ["-c", "ELSEWHERE/pytest.ini"],
        ["--rootdir=ELSEWHERE"],
        ["--cache-clear"],
        ["-kfoo"],
        ["-k", "--basetemp=ELSEWHERE"],
        ["-k"],
        ["@ELSEWHERE/args.txt"],
        ["ELSEWHERE"],
        ["../outside/test_x.py"],
        ["secret.txt"],
        ["tests/../secret.txt::x"],
    ],
)
async def test_options_that_write_or_redirect_are_refused_and_nothing_runs(
    root: Path, tmp_path: Path, args: list[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("mine")
    given = [a.replace("ELSEWHERE", str(elsewhere)) for a in args]
    result = await pool(root).execute("run_tests", {"args": given}, CTX)
    assert result.is_error and "is not allowed" in result.text, result.text
    assert "Tests" not in result.text.split("\n")[0]  # refused before running anything
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep"]
    assert (elsewhere / "keep").read_text() == "mine"


@pytest.mark.parametrize(
    ("args", "ran"),
    [
        (["-k", "test_ok"], "1 passed, 1 deselected"),
        (["tests/test_it.py::test_other", "-q"], "1 passed"),
        (["tests", "-x", "--maxfail=1", "--tb", "short"], "2 passed"),
    ],
)
async def test_selectors_and_allowed_options_run(root: Path, args: list[str], ran: str) -> None:
    result = await pool(root).execute("run_tests", {"args": args}, CTX)
    assert not result.is_error and ran in result.text, result.text


async def test_the_allow_list_comes_from_the_settings(root: Path) -> None:
    strict = Commands(
        test=[sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        test_args=TestArgs(flags=["-q"], values=[]),
    )
    refused = await pool(root, strict).execute("run_tests", {"args": ["-k", "ok"]}, CTX)
    assert refused.is_error and "only these options: -q." in refused.text
    ran = await pool(root, strict).execute("run_tests", {"args": ["-q", "tests"]}, CTX)
    assert not ran.is_error and "2 passed" in ran.text


async def test_the_description_names_each_option_once_and_long_forms_still_run(
    root: Path,
) -> None:
    """Every request carries the description: pytest's long aliases are left out of it where
    the short form is listed, yet stay allowed; a list without the short form shows the long."""
    tool = pool(root).get("run_tests")
    assert tool is not None
    options = tool.description.split("the options ", 1)[1].split(", or their long forms")[0]
    assert options.split()[:3] == ["-x", "-q", "-v"] and "--exitfirst" not in options
    assert "--maxfail" in options and "-W" in options
    ran = await pool(root).execute("run_tests", {"args": ["tests", "--exitfirst", "--quiet"]}, CTX)
    assert not ran.is_error and "2 passed" in ran.text, ran.text
    only_long = Commands(test_args=TestArgs(flags=["--exitfirst"], values=[]))
    described = pool(root, only_long).get("run_tests")
    assert described is not None and "options --exitfirst (e.g." in described.description


async def test_a_packages_test_paths_are_judged_from_its_folder(tmp_path: Path) -> None:
    """A monorepo package's tests run in its folder, so `tests/test_it.py` is its own file,
    and the read area is judged for the path the test command will open."""
    monorepo = tmp_path / "mono"
    (monorepo / "packages" / "web" / "tests").mkdir(parents=True)
    (monorepo / "packages" / "web" / "tests" / "test_it.py").write_text(TESTS)
    (monorepo / "packages" / "api").mkdir()
    (monorepo / "packages" / "api" / "test_secret.py").write_text(TESTS)
    commands = Commands(
        test=[sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], folder="packages/web"
    )
    guard = PathGuard(monorepo, ["packages/web"], ["packages/web/src"])
    tools = ToolPool(command_tools(monorepo, commands, AppProcess(ProcessGroups()), guard=guard))
    ran = await tools.execute("run_tests", {"args": ["tests/test_it.py::test_ok"]}, CTX)
    assert not ran.is_error and "1 passed" in ran.text, ran.text
    outside = await tools.execute("run_tests", {"args": ["../api/test_secret.py"]}, CTX)
    assert outside.is_error and "is not allowed" in outside.text, outside.text
