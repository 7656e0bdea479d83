"""The command tools: build, test, start and stop the app, with fixed argv lists from settings.

The model never gets a shell. It gets four tools whose commands the user configured in
`[commands]`, and it sees a summary of their output, not the output itself: a verdict line, the
error and warning lines, and the tail. Full compiler output would cost tokens in every later
round. The `file:line` problems found in the output are also emitted as a `BuildChecked` event,
so the editor can show them on the source files they name.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path
from typing import Any, Literal

from cardrunner.agent.events import BuildChecked, Problem, ToolOutput
from cardrunner.agent.toolpool import MAX_RESULT_CHARS, Tool, ToolContext, ToolError
from cardrunner.config.confinement import PYTEST_LONG
from cardrunner.config.secrets import redact
from cardrunner.config.settings import Commands
from cardrunner.processes.command import CommandResult, run_command
from cardrunner.processes.liveapp import AppProcess
from cardrunner.processes.sandbox import Sandbox
from cardrunner.tools.base import Followed, FunctionTool, Handler, check_test_args
from cardrunner.tools.base import schema as make_schema
from cardrunner.tools.guard import PathGuard
from cardrunner.verify.builds import counted
from cardrunner.verify.decisive import classify, decisive
from cardrunner.verify.runneroutput import counting_argv

_POINTER_RE = re.compile(r"^\s*-->\s*(?P<where>\S.*?)\s*$")
_SECTION_RE = re.compile(r"^[=_-]{3,} [A-Z][A-Z ]+ [=_-]{3,}$")
"""Decoration like pytest's `==== FAILURES ====`: no information of its own."""
_MAX_LINE = 300
_RELEVANT_BUDGET = 1800
_SUMMARY_BUDGET = MAX_RESULT_CHARS - 200
_APP_STARTUP_MARGIN = 30.0


_COLON_RE = re.compile(
    r"^\s*(?:-->\s*)?(?P<path>(?:[A-Za-z]:)?[^\s:][^:]*?):(?P<line>\d+)(?::(?P<col>\d+))?"
    r"(?:(?::|\s+-)\s+(?P<msg>.*\S))?\s*$"
)
_PAREN_RE = re.compile(
    r"^\s*(?P<path>[^\s(][^(]*?)\((?P<line>\d+),(?P<col>\d+)\)\s*:\s*(?P<msg>.*\S)\s*$"
)
_FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_BARE_EXC_RE = re.compile(r"^(?:in \S+|[A-Za-z_][\w.]*(?:Error|Exception|Failed|Exit))$")
_SKIP_PARTS = frozenset({".venv", "venv", "site-packages", "dist-packages", "node_modules", ".git"})
_MAX_PROBLEMS = 200
Severity = Literal["error", "warning"]


class _Locator:
    """Turns paths from tool output into workspace-relative paths of existing files, or None."""

    def __init__(self, root: Path, seen_as: Path | None = None, cwd: Path | None = None) -> None:
        self.root = root.resolve()
        self.seen_as = seen_as.resolve() if seen_as else None  # where the sandbox showed `root`
        self.cwd = cwd.resolve() if cwd else self.root  # where the command ran (a package's)
        self._cache: dict[str, str | None] = {}

    def __call__(self, raw: str) -> str | None:
        if raw not in self._cache:
            self._cache[raw] = self._find(raw)
        return self._cache[raw]

    def _find(self, raw: str) -> str | None:
        try:
            path = Path(raw.strip())
            full = (path if path.is_absolute() else self.cwd / path).resolve()
            if self.seen_as and not full.is_relative_to(self.root):
                full = self.root / full.relative_to(self.seen_as)
            rel = full.relative_to(self.root)
        except (ValueError, OSError, RuntimeError):
            return None
        if _SKIP_PARTS.intersection(rel.parts) or not full.is_file():
            return None
        return rel.as_posix()


def _severity(message: str) -> Severity | None:
    """error, warning, or None for lines that only annotate another problem (notes, hints)."""
    first = re.split(r"[\s:\[(]", message.strip().lower(), maxsplit=1)[0]
    if first in {"note", "info", "hint", "help"}:
        return None
    return "warning" if first in {"warning", "warn"} else "error"


class _Scanner:
    """One pass over the output; remembers what a later line needs (frames, `E` lines, headers)."""

    def __init__(self, root: Path, seen_as: Path | None = None, cwd: Path | None = None) -> None:
        self.locate = _Locator(root, seen_as, cwd)
        self.found: dict[tuple[str, int, int, str], Problem] = {}
        self.frames: list[tuple[str, int]] = []  # a Python traceback in progress
        self.explanation: list[str] = []  # pytest's `E   ...` lines
        self.pending: tuple[str, int, int] | None = None  # pytest --tb=short `path:N: in func`
        self.header = ""  # the line a rustc/ruff `--> path:N:M` pointer belongs to

    def add(self, path: str | None, line: int, col: int, message: str) -> None:
        severity = _severity(message)
        if path and severity and message and len(self.found) < _MAX_PROBLEMS:
            problem = Problem(
                path=path,
                line=max(line, 1),
                column=max(col, 1),
                severity=severity,
                message=message[:500],
            )
            self.found.setdefault((path, line, col, message), problem)

    def feed(self, line: str) -> None:
        if frame := _FRAME_RE.match(line):
            self.frames.append((frame["path"], int(frame["line"])))
        elif line.startswith("E ") or line == "E":
            self.explanation.append(line[1:].strip())
            if self.pending and self.explanation[-1]:
                self.add(*self.pending, self.explanation[-1])
                self.pending = None
        else:
            self._end_traceback(line)
            self._location(line)

    def _end_traceback(self, line: str) -> None:
        """The first unindented line after `File "…", line N` frames is the exception."""
        if not self.frames or not line or line[0].isspace():
            return
        if line.startswith(("Traceback", "During handling", "The above exception")):
            return
        inside = [(path, n) for path, n in ((self.locate(p), n) for p, n in self.frames) if path]
        if inside:
            self.add(inside[-1][0], inside[-1][1], 1, line.strip())
        self.frames = []

    def _location(self, line: str) -> None:
        match = _COLON_RE.match(line) or _PAREN_RE.match(line)
        if not match:
            if line and not line[0].isspace() and not line.startswith(("|", "=")):
                self.header = line.strip()
            return
        path, number = self.locate(match["path"]), int(match["line"])
        col = int(match["col"]) if match["col"] else 1
        message = (match["msg"] or "").strip()
        if line.lstrip().startswith("-->"):
            message = self.header
        elif message.startswith("in ") and _BARE_EXC_RE.match(message):
            self.pending = (path, number, col) if path else self.pending
            self.explanation = []
            return
        elif _BARE_EXC_RE.match(message) and any(self.explanation):
            message = f"{message}: {next(e for e in self.explanation if e)}"
        self.add(path, number, col, message)
        self.explanation = []


def parse_problems(
    output: str, root: Path, seen_as: Path | None = None, cwd: Path | None = None
) -> list[Problem]:
    """`file:line[:col]: message` problems in build or test output, for files inside `root`.

    Understands gcc/clang, ruff, mypy, tsc and MSBuild lines, rustc/ruff `--> file:line:col`
    pointers, Python tracebacks (the innermost frame in the workspace) and pytest's
    `path:line: AssertionError` with its `E ...` explanation. Paths come back workspace-relative,
    and only files that exist inside `root` (outside `.venv`, `node_modules`, …) are kept;
    absolute paths name `root` where the sandbox showed it (`seen_as`), relative ones `cwd`.
    """
    scanner = _Scanner(root, seen_as, cwd)
    for raw in output.splitlines():
        scanner.feed(raw.rstrip())
    return list(scanner.found.values())


def _headline(result: CommandResult, label: str) -> str:
    if result.timed_out:
        return f"{label} timed out after {result.ms / 1000:.0f} s and was killed."
    if result.ok:
        return f"{label} succeeded."
    return f"{label} failed with exit code {result.exit_code}."


def _relevant_lines(lines: list[str]) -> tuple[list[str], int]:
    """Error lines, then warning lines, deduplicated, within a budget; and how many were left.

    What counts as an error or a warning is the runner's own format (`classify`): cargo's
    passing `test result: ok. 0 failed` is neither, nor is a timestamp like `20:36:25`.

    A rustc/ruff pointer (`--> path:line:col`) is joined with the headline above it, so the
    model sees what is wrong and where in one line.
    """
    errors: list[str] = []
    warnings: list[str] = []
    seen: set[str] = set()
    header = ""
    for line in lines:
        if pointer := _POINTER_RE.match(line):
            line = f"{pointer['where']}: {header}" if header else line
        elif not line[:1].isspace() and not line.startswith("|"):
            header = line.strip()
        key = line.strip()
        if key in seen or _SECTION_RE.match(key):
            continue
        kind = classify(line)
        if kind is None:
            continue
        (errors if kind == "error" else warnings).append(line)
        seen.add(key)
    chosen: list[str] = []
    used = 0
    for line in errors + warnings:
        if used + len(line) > _RELEVANT_BUDGET:
            break
        chosen.append(line)
        used += len(line) + 1
    return chosen, len(errors) + len(warnings) - len(chosen)


def summarize_output(
    result: CommandResult, label: str, count: bool = False, runner: str | None = None
) -> str:
    """A verdict line, for tests the runner's count (`runner`: the configured test runner's),
    the error and warning lines (errors first), then the tail of the output."""
    head = [
        _headline(result, label),
        f"Command: {shlex.join(result.argv)} ({result.ms / 1000:.1f} s)",
    ]
    if count and not result.spawn_error and not result.timed_out:
        head.append(counted(result.output, runner))
    if result.spawn_error:
        return "\n".join([*head, result.spawn_error])
    lines = [ln.rstrip()[:_MAX_LINE] for ln in result.output.splitlines() if ln.strip()]
    if not lines:
        return "\n".join([*head, "(no output)"])
    relevant, left = _relevant_lines(lines)
    parts = head
    if relevant:
        parts += ["--- errors and warnings ---", *relevant]
        if left:
            parts.append(f"[{left} more error/warning lines not shown]")
    budget = _SUMMARY_BUDGET - sum(len(p) + 1 for p in parts)
    tail: list[str] = []
    for line in reversed(lines[-(40 if not result.ok else 15) :]):
        if budget - len(line) - 1 < 0:
            break
        tail.insert(0, line)
        budget -= len(line) + 1
    if tail and not set(tail) <= set(relevant):
        parts += [f"--- last {len(tail)} lines of output ---", *tail]
    return "\n".join(parts)


def _not_configured(what: str) -> ToolError:
    return ToolError(
        f"no [commands] {what} configured in cardrunner.toml; this tool cannot run here. "
        "Say so in your final answer if the card needs it."
    )


def command_tools(
    root: Path,
    commands: Commands,
    app: AppProcess,
    env: dict[str, str] | None = None,
    sandbox: Sandbox | None = None,
    guard: PathGuard | None = None,
) -> list[Tool]:
    """build_app, run_tests, start_app and stop_app for the workspace at `root`.

    Builds and tests join the app's `ProcessGroups`: one run, one ledger of what it started.
    Every command runs inside `sandbox` when one is given (a run always gives one; `off` mode
    still filters the environment). The model's test arguments must name paths `guard` lets it
    read (default: anything under `root`) and options `commands.test_args` allows."""
    limit = commands.timeout_seconds
    readable = guard or PathGuard(root, ["."], [])
    where = root / commands.folder  # a monorepo package's folder (config/packages.py)

    async def checked(tool: str, label: str, argv: list[str], ctx: ToolContext) -> str:
        def stream(text: str) -> None:  # the editor shows test results as they pass
            ctx.emit(ToolOutput(name=tool, text=redact(text)))

        result = await run_command(
            argv, where, limit, env, on_output=stream, groups=app.groups, sandbox=sandbox
        )
        if result.spawn_error:
            raise ToolError(f"{label} could not start: {result.spawn_error}")
        seen_as = sandbox.checkout if sandbox else None
        problems = await asyncio.to_thread(parse_problems, result.output, root, seen_as, where)
        why = [] if result.ok else decisive(result.output)
        ctx.emit(BuildChecked(tool=tool, ok=result.ok, problems=problems, why=why))
        text = summarize_output(result, label, tool == "run_tests", commands.test_runner)
        if tool == "build_app" and app.running:
            text += "\nNote: the app is still running the previous build; start_app restarts it."
        if result.timed_out:  # the command could not do its job: an error, not a verdict
            raise ToolError(text)
        return text

    async def build_app(args: dict[str, Any], ctx: ToolContext) -> str:
        if not commands.build:
            raise _not_configured("build")
        return await checked("build_app", "Build", commands.build, ctx)

    async def run_tests(args: dict[str, Any], ctx: ToolContext) -> str:
        if not commands.test:
            raise _not_configured("test")
        extra = check_test_args(args.get("args", []), commands.test_args, readable, commands.folder)
        argv = counting_argv([*commands.test, *extra])  # `go test -v`, `ctest -V`: counted
        return await checked("run_tests", "Tests", argv, ctx)

    async def start_app(args: dict[str, Any], ctx: ToolContext) -> str:
        if not commands.app:
            raise _not_configured("app")
        url, wait = commands.app_url, commands.app_wait_seconds
        return await app.start(commands.app, where, env, sandbox, url, wait)

    async def stop_app(args: dict[str, Any], ctx: ToolContext) -> str:
        return await app.stop()

    return _described(commands, app, [build_app, run_tests, start_app, stop_app])


def restarting(tools: list[Tool], app: AppProcess, commands: Commands) -> list[Tool]:
    """`tools` (the file tools), with `write_file` and `edit_file` restarting the app the model
    started, so no browser checks code older than the files (`AppProcess.refresh`)."""
    budget = commands.app_wait_seconds + _APP_STARTUP_MARGIN
    writes = ("write_file", "edit_file")
    return [Followed(t, app.refresh, budget) if t.name in writes else t for t in tools]


def _shown(argv: list[str] | None) -> str:
    return f"`{shlex.join(argv)}`" if argv else "(not configured in this workspace)"


def _options(allowed: list[str]) -> str:
    """The allowed test options, a long one left out where its short form is shown: each name
    costs tokens on every request, and the model knows pytest's aliases."""
    shown = [o for o in allowed if PYTEST_LONG.get(o) not in allowed]
    extra = ", or their long forms" if len(shown) < len(allowed) else ""
    return " ".join(shown) + extra


def _described(commands: Commands, app: AppProcess, handlers: list[Handler]) -> list[Tool]:
    """The four command tools as the model sees them, around their handlers (in that order)."""
    build_app, run_tests, start_app, stop_app = handlers
    limit = commands.timeout_seconds
    url = commands.app_url
    serves = (
        f" It serves {url}: the call returns once that URL answers, and this run's MCP servers "
        "(a browser) reach it there. While it runs, write_file and edit_file restart it."
        if url
        else ""
    )
    wait = commands.app_wait_seconds if url else app.startup_seconds
    where = "the workspace root" if commands.folder == "." else f"the folder {commands.folder}"
    return [
        FunctionTool(
            "build_app",
            f"Builds the app with {_shown(commands.build)} in {where}. Call stop_app "
            "first: a running app may lock its files and keeps running the old build. Returns "
            "a verdict line, the errors and warnings, and the end of the output.",
            make_schema(),
            build_app,
            timeout=limit + 30,
        ),
        FunctionTool(
            "run_tests",
            f"Runs the tests with {_shown(commands.test)} in {where}. `args` are "
            "appended to the command to run fewer tests: test paths or node ids, and the "
            f"options {_options(commands.test_args.flags + commands.test_args.values)} "
            "(e.g. ['tests/test_x.py', '-k', 'name']). Returns a verdict line, the failures, "
            "and the end of the output.",
            make_schema({"args": {"type": "array", "items": {"type": "string"}, "maxItems": 50}}),
            run_tests,
            timeout=limit + 30,
        ),
        FunctionTool(
            "start_app",
            f"Starts the app with {_shown(commands.app)} in the background (one instance; a "
            f"running one is restarted).{serves} Returns its first output lines, or its exit "
            "code and output if it dies at once. Then verify the card's behaviour live.",
            make_schema(),
            start_app,
            timeout=wait + _APP_STARTUP_MARGIN,
        ),
        FunctionTool(
            "stop_app",
            "Stops the app started by start_app (with every process it spawned) and returns "
            "its last output lines. Call it before build_app and before you finish.",
            make_schema(),
            stop_app,
            timeout=_APP_STARTUP_MARGIN,
        ),
    ]
