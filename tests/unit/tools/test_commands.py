"""The command port with real subprocesses: time-outs and cancellation kill whole groups."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from cardrunner.agent.events import BuildChecked, Event, ToolOutput
from cardrunner.agent.toolpool import MAX_RESULT_CHARS, ToolContext, ToolPool
from cardrunner.config.settings import Commands
from cardrunner.processes.command import CommandError, CommandResult, run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.liveapp import AppProcess
from cardrunner.tools.commands import command_tools, parse_problems, summarize_output

PY = sys.executable
GROUPS = ProcessGroups()
"""The process groups these tests start (a run has one of its own)."""

# A leader that starts a child which ignores SIGTERM (so the SIGKILL escalation is needed),
# writes both pids to a file once the child runs, then sleeps.
HANG = textwrap.dedent(
    """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('child ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    child.stdout.readline()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    print("leader ready", flush=True)
    time.sleep(60)
    """
)


async def wait_until(condition: Callable[[], bool], within: float = 20.0) -> None:
    """Poll `condition` until true; fail the test if it does not become true in time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def pids(path: Path) -> tuple[int, int]:
    leader, child = path.read_text().split()
    return int(leader), int(child)


async def start_hang(tmp_path: Path) -> tuple[asyncio.Task[CommandResult], int]:
    """`HANG` run in the background (a two-minute time-out): its task, and its leader's pid once
    the leader and its child both run."""
    marker = tmp_path / "pids"
    task = asyncio.create_task(
        run_command([PY, "-c", HANG, str(marker)], tmp_path, timeout=120, groups=GROUPS)
    )
    await wait_until(marker.exists)
    leader, _ = pids(marker)
    return task, leader


async def test_output_and_exit_code(tmp_path: Path) -> None:
    code = "import sys; print('to out', flush=True); print('to err', file=sys.stderr); sys.exit(4)"
    result = await run_command([PY, "-c", code], tmp_path, timeout=30, groups=GROUPS)
    assert (result.exit_code, result.timed_out, result.ok) == (4, False, False)
    assert "to out" in result.output and "to err" in result.output
    ok = await run_command([PY, "-c", "print('ä', end='')"], tmp_path, timeout=30, groups=GROUPS)
    assert (ok.exit_code, ok.output, ok.ok) == (0, "ä", True)


async def test_undecodable_output_is_replaced(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end')"
    result = await run_command([PY, "-c", code], tmp_path, timeout=30, groups=GROUPS)
    assert result.output == "ok \ufffd\ufffd end"


async def test_missing_executable_is_a_result(tmp_path: Path) -> None:
    result = await run_command(
        ["no-such-program-xyz", "--help"], tmp_path, timeout=30, groups=GROUPS
    )
    assert result.exit_code == 127 and not result.ok
    assert result.spawn_error and "no such program" in result.spawn_error
    missing_dir = await run_command([PY, "-V"], tmp_path / "nope", timeout=30, groups=GROUPS)
    assert missing_dir.spawn_error and "does not exist" in missing_dir.spawn_error


async def test_secrets_are_not_passed_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    code = "import os; print(os.environ.get('ANTHROPIC_API_KEY'), os.environ['EXTRA'])"
    result = await run_command(
        [PY, "-c", code], tmp_path, timeout=30, env={"EXTRA": "yes"}, groups=GROUPS
    )
    assert result.output.strip() == "None yes"


async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "pids"
    result = await run_command([PY, "-c", HANG, str(marker)], tmp_path, timeout=8, groups=GROUPS)
    assert result.timed_out and not result.ok
    assert "leader ready" in result.output
    leader, child = pids(marker)
    await wait_until(lambda: group_gone(leader))
    assert group_gone(os.getpgid(os.getpid())) is False  # sanity: the check can say "alive"
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert leader not in GROUPS.live()


async def test_cancellation_kills_the_whole_group(tmp_path: Path) -> None:
    task, leader = await start_hang(tmp_path)
    assert leader in GROUPS.live()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: group_gone(leader))
    assert leader not in GROUPS.live()


async def test_kill_all_ends_every_group(tmp_path: Path) -> None:
    task, leader = await start_hang(tmp_path)
    GROUPS.kill_all()
    result = await task
    assert result.exit_code == -9 and not result.timed_out and "leader ready" in result.output
    await wait_until(lambda: group_gone(leader))
    assert leader not in GROUPS.live()


async def test_leftover_children_are_ended_after_a_normal_exit(tmp_path: Path) -> None:
    marker = tmp_path / "child"
    code = textwrap.dedent(
        f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(marker)!r}, "w").write(str(child.pid))
        print("leader done")
        """
    )
    result = await run_command([PY, "-c", code], tmp_path, timeout=60, groups=GROUPS)
    assert result.ok and "leader done" in result.output
    child = int(marker.read_text())
    await wait_until(lambda: not Path(f"/proc/{child}").exists() or _zombie(child))


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] == "Z"


async def test_app_start_output_stop(tmp_path: Path) -> None:
    app = AppProcess(GROUPS)
    code = "import time; print('listening on 8000'); time.sleep(60)"
    started = await app.start([PY, "-c", code], tmp_path)
    assert started.startswith("Started the app (pid ")
    assert app.running
    pgid = app._proc.pid if app._proc else -1
    await wait_until(lambda: "listening on 8000" in app.output())
    again = await app.start([PY, "-c", code], tmp_path)  # a running app is restarted
    assert again.startswith(f"Restarted the app (the one running as pid {pgid} was stopped).")
    await wait_until(lambda: group_gone(pgid))
    pgid = app._proc.pid if app._proc else -1
    stopped = await app.stop()
    assert stopped.startswith("Stopped the app") and "listening on 8000" in stopped
    assert not app.running
    await wait_until(lambda: group_gone(pgid))
    assert await app.stop() == "The app is not running."


async def test_app_that_dies_at_once(tmp_path: Path) -> None:
    app = AppProcess(GROUPS, startup_seconds=30)  # returns as the process exits
    code = "import sys; print('port already in use'); sys.exit(3)"
    with pytest.raises(CommandError) as info:  # the tool turns it into what the model reads
        await app.start([PY, "-c", code], tmp_path)
    assert "exited at once with exit code 3" in str(info.value)
    assert "port already in use" in str(info.value)
    assert not app.running
    with pytest.raises(CommandError, match="no such program"):
        await app.start(["no-such-app-xyz"], tmp_path)


async def test_app_exit_later_is_reported_by_stop(tmp_path: Path) -> None:
    app = AppProcess(GROUPS, startup_seconds=0.01)
    release = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(release)!r}): time.sleep(0.02)\n"
        "print('crashed'); sys.exit(9)"
    )
    await app.start([PY, "-c", code], tmp_path)
    release.write_text("")
    await wait_until(lambda: not app.running)
    stopped = await app.stop()
    assert "already exited by itself with exit code 9" in stopped and "crashed" in stopped


async def test_app_aclose_kills_children_and_is_idempotent(tmp_path: Path) -> None:
    app = AppProcess(GROUPS)
    marker = tmp_path / "pids"
    await app.start([PY, "-c", HANG, str(marker)], tmp_path)
    await wait_until(marker.exists)
    leader, child = pids(marker)
    await app.aclose()
    await app.aclose()
    assert not app.running
    await wait_until(lambda: group_gone(leader))
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


# --- the tools ---------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_ok():\n    assert True\n"
    )
    return tmp_path


def tools_for(root: Path, commands: Commands, app: AppProcess) -> tuple[ToolPool, list[Event]]:
    events: list[Event] = []
    return ToolPool(command_tools(root, commands, app)), events


async def test_run_tests_reports_failures_and_problems(project: Path) -> None:
    test = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    pool, events = tools_for(project, Commands(test=test), AppProcess(GROUPS))
    ctx = ToolContext(round=1, emit=events.append)
    result = await pool.execute("run_tests", {}, ctx)
    assert not result.is_error
    assert result.text.startswith("Tests failed with exit code 1.\n")
    assert "FAILED tests/test_calc.py::test_add" in result.text
    streamed = "".join(e.text for e in events if isinstance(e, ToolOutput))
    assert "FAILED tests/test_calc.py::test_add" in streamed  # shown as it came
    assert all(isinstance(e, ToolOutput) for e in events[:-1])
    event = events[-1]
    assert isinstance(event, BuildChecked) and event.tool == "run_tests" and not event.ok
    assert [(p.path, p.line) for p in event.problems] == [("tests/test_calc.py", 5)]
    assert "assert -1 == 3" in event.problems[0].message

    narrowed = await pool.execute("run_tests", {"args": ["-k", "test_ok"]}, ctx)
    assert narrowed.text.startswith("Tests succeeded.") and "1 passed" in narrowed.text
    last = events[-1]
    assert isinstance(last, BuildChecked) and last.ok and last.problems == []


async def test_build_app_and_not_configured(project: Path) -> None:
    app = AppProcess(GROUPS)
    build = [PY, "-c", "import sys; print('calc.py:2:5: error: wrong sign'); sys.exit(2)"]
    pool, events = tools_for(project, Commands(build=build, timeout_seconds=50), app)
    ctx = ToolContext(round=1, emit=events.append)
    result = await pool.execute("build_app", {}, ctx)
    assert result.text.splitlines()[0] == "Build failed with exit code 2."
    assert "calc.py:2:5: error: wrong sign" in result.text
    (output, event) = events
    assert isinstance(output, ToolOutput) and output.text == "calc.py:2:5: error: wrong sign\n"
    assert isinstance(event, BuildChecked)
    assert [(p.path, p.line, p.column) for p in event.problems] == [("calc.py", 2, 5)]
    missing = await pool.execute("start_app", {}, ctx)
    assert missing.is_error
    assert missing.text.startswith("no [commands] app configured in cardrunner.toml")
    timeouts = {
        t.name: t.timeout for t in command_tools(project, Commands(timeout_seconds=50), app)
    }
    assert timeouts["build_app"] == timeouts["run_tests"] == 80


async def test_build_notes_a_running_app_and_stop_app(project: Path) -> None:
    app = AppProcess(GROUPS)
    commands = Commands(
        build=[PY, "-c", "print('built')"], app=[PY, "-c", "import time; time.sleep(60)"]
    )
    pool, events = tools_for(project, commands, app)
    ctx = ToolContext(round=1, emit=events.append)
    started = await pool.execute("start_app", {}, ctx)
    assert started.text.startswith("Started the app")
    built = await pool.execute("build_app", {}, ctx)
    assert built.text.startswith("Build succeeded.") and "app is still running" in built.text
    stopped = await pool.execute("stop_app", {}, ctx)
    assert stopped.text.startswith("Stopped the app") and not app.running
    await app.aclose()


async def test_missing_build_program_is_a_tool_error(project: Path) -> None:
    pool, events = tools_for(project, Commands(build=["no-such-compiler-xyz"]), AppProcess(GROUPS))
    result = await pool.execute("build_app", {}, ToolContext(round=1, emit=events.append))
    assert result.is_error and "no such program" in result.text and events == []


def test_command_result_ok() -> None:
    assert CommandResult(["x"], 0, "").ok
    assert not CommandResult(["x"], 0, "", timed_out=True).ok


# --- summaries and problems from realistic output -----------------------------------------

PYTEST_FAILURE = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.6.0
rootdir: /work/proj
collected 2 items

tests/test_calc.py F.                                                    [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 2) == 3
E       assert -1 == 3
E        +  where -1 = add(1, 2)

tests/test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert -1 == 3
========================= 1 failed, 1 passed in 0.03s ==========================
"""

PYTEST_SHORT = """\
tests/test_calc.py:5: in test_add
    assert add(1, 2) == 3
src/calc.py:2: in add
    raise ValueError("negative")
E   ValueError: negative
"""

TRACEBACK = """\
Traceback (most recent call last):
  File "{root}/src/app.py", line 12, in <module>
    main()
  File "{root}/src/calc.py", line 2, in add
    return a - b
  File "{root}/.venv/lib/python3.11/site-packages/lib.py", line 40, in helper
    raise ZeroDivisionError("division by zero")
ZeroDivisionError: division by zero
"""

LINTERS = """\
src/calc.py:1:8: F401 [*] `os` imported but unused
src/calc.py:2: error: Incompatible return value type (got "str", expected "int")  [return-value]
src/calc.py:2: note: See https://mypy.readthedocs.io for more
src/main.c:3:9: warning: unused variable 'x' [-Wunused-variable]
src/main.c:4:5: error: 'y' undeclared (first use in this function)
src/app.ts(7,3): error TS2322: Type 'string' is not assignable to type 'number'.
src/app.ts:8:1 - error TS1005: ';' expected.
F841 Local variable `z` is assigned to but never used
 --> src/calc.py:3:5
  |
/usr/include/stdio.h:12:1: error: outside the workspace
src/missing.py:1:1: E999 file that does not exist
Found 5 errors.
"""


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    for name in ["src/calc.py", "src/app.py", "src/main.c", "src/app.ts", "tests/test_calc.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    lib = tmp_path / ".venv/lib/python3.11/site-packages/lib.py"
    lib.parent.mkdir(parents=True)
    lib.write_text("x\n")
    return tmp_path


def found(output: str, root: Path) -> list[tuple[str, int, int, str, str]]:
    return [(p.path, p.line, p.column, p.severity, p.message) for p in parse_problems(output, root)]


def test_problems_from_pytest(sources: Path) -> None:
    assert found(PYTEST_FAILURE, sources) == [
        ("tests/test_calc.py", 5, 1, "error", "AssertionError: assert -1 == 3")
    ]
    assert found(PYTEST_SHORT, sources) == [("src/calc.py", 2, 1, "error", "ValueError: negative")]


def test_problems_from_a_traceback(sources: Path) -> None:
    output = TRACEBACK.format(root=sources)
    assert found(output, sources) == [
        ("src/calc.py", 2, 1, "error", "ZeroDivisionError: division by zero")
    ]


def test_problems_from_linters_and_compilers(sources: Path) -> None:
    assert found(LINTERS, sources) == [
        ("src/calc.py", 1, 8, "error", "F401 [*] `os` imported but unused"),
        (
            "src/calc.py",
            2,
            1,
            "error",
            'error: Incompatible return value type (got "str", expected "int")  [return-value]',
        ),
        ("src/main.c", 3, 9, "warning", "warning: unused variable 'x' [-Wunused-variable]"),
        ("src/main.c", 4, 5, "error", "error: 'y' undeclared (first use in this function)"),
        (
            "src/app.ts",
            7,
            3,
            "error",
            "error TS2322: Type 'string' is not assignable to type 'number'.",
        ),
        ("src/app.ts", 8, 1, "error", "error TS1005: ';' expected."),
        ("src/calc.py", 3, 5, "error", "F841 Local variable `z` is assigned to but never used"),
    ]


def test_absolute_paths_become_relative(sources: Path) -> None:
    output = f"{sources}/src/calc.py:9:2: error: boom\n"
    assert found(output, sources) == [("src/calc.py", 9, 2, "error", "error: boom")]


def result_of(output: str, code: int = 1, timed_out: bool = False) -> CommandResult:
    return CommandResult(["make", "all"], code, output, timed_out=timed_out, ms=12_300)


def test_summary_of_a_failed_build() -> None:
    output = "\n".join(
        [f"compiling module {i}" for i in range(200)]
        + [
            "src/a.c:1:1: warning: unused",
            "src/b.c:2:2: error: broken",
            "src/b.c:2:2: error: broken",
        ]
        + ["make: *** [all] Error 1"]
    )
    text = summarize_output(result_of(output), "Build")
    lines = text.splitlines()
    assert lines[0] == "Build failed with exit code 1."
    assert lines[1] == "Command: make all (12.3 s)"
    relevant = lines[lines.index("--- errors and warnings ---") + 1 :]
    assert relevant[:3] == [
        "src/b.c:2:2: error: broken",
        "make: *** [all] Error 1",
        "src/a.c:1:1: warning: unused",
    ]
    assert text.count("src/b.c:2:2: error: broken") == 3  # once above, twice in the raw tail
    assert "compiling module 199" in text and "compiling module 100" not in text


def test_summary_errors_come_before_warnings() -> None:
    output = "warning: old api\nall fine\nsrc/x.py:3:1: E302 blank lines\nerror: real problem\n"
    lines = summarize_output(result_of(output), "Build").splitlines()
    start = lines.index("--- errors and warnings ---")
    assert lines[start + 1 : start + 4] == [
        "src/x.py:3:1: E302 blank lines",  # a file:line location counts as an error
        "error: real problem",
        "warning: old api",
    ]


def test_summary_of_success_timeout_and_spawn_error() -> None:
    assert summarize_output(result_of("5 passed\n", code=0), "Tests").startswith(
        "Tests succeeded.\nCommand: make all (12.3 s)\n--- last 1 lines of output ---\n5 passed"
    )
    timed = summarize_output(result_of("working...\n", code=-15, timed_out=True), "Build")
    assert timed.startswith("Build timed out after 12 s and was killed.")
    spawn = CommandResult(["gcc"], 127, "", spawn_error="cannot run 'gcc': no such program")
    assert summarize_output(spawn, "Build").splitlines()[-1] == "cannot run 'gcc': no such program"


def test_summary_fits_the_gate() -> None:
    output = "\n".join(f"error {i}: " + "x" * 280 for i in range(500))
    text = summarize_output(result_of(output), "Build")
    assert len(text) <= MAX_RESULT_CHARS
    assert "more error/warning lines not shown" in text


def test_summary_joins_pointers_with_their_headline_and_drops_decoration() -> None:
    output = (
        "F401 [*] `os` imported but unused\n --> src/calc.py:1:8\n  |\n1 | import os\n"
        "=================================== FAILURES ===================================\n"
        "/venv/lib/plugin.py:306: PytestDeprecationWarning: option unset\n"
        "Found 1 error.\n"
    )
    lines = summarize_output(result_of(output), "Build").splitlines()
    start = lines.index("--- errors and warnings ---")
    assert lines[start + 1 : lines.index("--- last 7 lines of output ---")] == [
        "src/calc.py:1:8: F401 [*] `os` imported but unused",
        "Found 1 error.",
        "/venv/lib/plugin.py:306: PytestDeprecationWarning: option unset",
    ]


RUNNER_OUTPUT = Path(__file__).parents[2] / "data" / "runner_output"


def _relevant(name: str, exit_code: int) -> list[str]:
    output = (RUNNER_OUTPUT / name).read_text(encoding="utf-8")
    text = summarize_output(CommandResult(["t"], exit_code, output), "Tests")
    if "--- errors and warnings ---" not in text:
        return []
    section = text.split("--- errors and warnings ---\n", 1)[1]
    return section.split("\n--- last", 1)[0].splitlines()


def test_passing_cargo_lines_are_not_errors_and_warnings() -> None:
    assert _relevant("cargo_pass.txt", 0) == []
    failing = _relevant("cargo_nofailfast.txt", 101)
    assert "test integration_fails ... FAILED" in failing
    assert not [line for line in failing if line.startswith("test result: ok.")]


def test_a_timestamp_is_not_a_file_and_line() -> None:
    relevant = _relevant("vitest.txt", 1)
    assert relevant and not [line for line in relevant if "Start at" in line]


async def test_a_failed_test_run_names_why_beside_its_problems(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("raise SystemExit('error: the fixture database is missing')\n")
    pool, events = tools_for(tmp_path, Commands(test=[PY, "t.py"]), AppProcess(GROUPS))
    await pool.execute("run_tests", {}, ToolContext(round=1, emit=events.append))
    checked = next(e for e in events if isinstance(e, BuildChecked))
    assert checked.why == ["error: the fixture database is missing"]


def test_the_runners_count_comes_first_whatever_the_tail_shows() -> None:
    """`cargo test` ends with its doc-tests: the tail says 12 passed, the run was 100 tests."""
    unit = [f"test tests::case_{i} ... ok" for i in range(88)]
    output = "\n".join(
        [
            "running 88 tests",
            *unit,
            "test result: ok. 88 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
            "   Doc-tests calc",
            "running 12 tests",
            *[f"test src/lib.rs - doc_{i} (line {i}) ... ok" for i in range(12)],
            "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        ]
    )
    lines = summarize_output(result_of(output, code=0), "Tests", count=True).splitlines()
    assert lines[2] == "Counted by the runner: 100 tests ran, 100 passed, 0 failed (cargo test)."
    assert "case_0" not in "\n".join(lines), "only the tail of the output follows"


def test_output_the_runner_cannot_count_says_so_first() -> None:
    text = summarize_output(result_of("all good\n", code=0), "Tests", count=True)
    assert text.splitlines()[2].startswith("Counted by the runner: no count (")
    assert "a deleted test would not be noticed" in text
