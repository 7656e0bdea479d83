"""What the sandbox hides and shows, asserted from inside a sandboxed command, with bwrap for real.

The home is a stand-in (tests run as root with HOME=/root): a fake one under tmp holds a
`~/.ssh/id_rsa`, an `~/.aws/credentials`, a `~/.config/gh/hosts.yml` and toolchain caches. Host
sockets are real Unix listeners in a folder under `/run` and outside every hidden folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.command import run_command
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import Sandbox

PY = sys.executable
GROUPS = ProcessGroups()
pytestmark = pytest.mark.skipif(not probe().ok, reason="bubblewrap cannot run here")

PROBE = """
    import json, os, pathlib, socket, sys
    def read(p):
        try:
            return pathlib.Path(p).read_text()
        except OSError as e:
            return type(e).__name__
    def write(p):
        try:
            pathlib.Path(p).write_text("built"); return "wrote"
        except OSError as e:
            return type(e).__name__
    def reach(p):
        try:
            s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(p); s.close()
            return "connected"
        except OSError as e:
            return type(e).__name__
    print(json.dumps({"read": {p: read(p) for p in sys.argv[1].split(",")},
                      "write": {p: write(p) for p in sys.argv[2].split(",")},
                      "reach": {p: reach(p) for p in sys.argv[3].split(",")}}))
"""


def fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for rel, text in {
        ".ssh/id_rsa": "PRIVATE KEY",
        ".aws/credentials": "aws_secret_access_key = x",
        ".config/gh/hosts.yml": "oauth_token: gho_x",
        ".netrc": "machine example.com password x",
        ".config/tool/settings.json": "{}",
        ".rustup/toolchains/stable/bin/rustc": "toolchain",
        ".cargo/credentials.toml": "token = 'x'",
        "notes.txt": "private notes",
    }.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    for cache in (".cache/pip", ".npm", ".cargo/registry"):
        (home / cache).mkdir(parents=True, exist_ok=True)
    return home


@pytest.fixture
def listeners() -> Iterator[dict[str, Path]]:
    """Unix sockets the sandbox must not reach: one in /run (as the session bus and agents
    have), one in /var/tmp that only SSH_AUTH_SOCK names, and the control under /var/tmp that
    nothing names (a socket outside every hidden folder stays reachable: the probe works)."""
    made: list[Path] = []
    servers: list[socket.socket] = []
    found: dict[str, Path] = {}
    for name, top in (
        ("run", Path("/run")),
        ("agent", Path("/var/tmp")),
        ("open", Path("/var/tmp")),
    ):
        folder = top / f"cardrunner-test-{uuid.uuid4().hex[:10]}"
        folder.mkdir()
        made.append(folder)
        path = folder / f"{name}.sock"
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        servers.append(server)
        found[name] = path
    try:
        yield found
    finally:
        for server in servers:
            server.close()
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


async def inside(sandbox: Sandbox, cwd: Path, read: list[Path], write: list[Path], reach: list[Path]) -> dict[str, dict[str, str]]:  # fmt: skip
    argv = [
        PY,
        "-c",
        textwrap.dedent(PROBE),
        *(",".join(map(str, x)) for x in (read, write, reach)),
    ]
    result = await run_command(argv, cwd, 60, {"PATH": os.environ["PATH"]}, groups=GROUPS, sandbox=sandbox)  # fmt: skip
    assert result.ok, result.output
    seen: dict[str, dict[str, str]] = json.loads(result.output.strip().splitlines()[-1])
    return seen


async def test_secrets_and_host_sockets_are_out_of_reach_while_caches_are_writable(
    tmp_path: Path, listeners: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = fake_home(tmp_path)
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(listeners["agent"]))
    sandbox = Sandbox.start(
        "bwrap", root, root / ".cardrunner" / "runs" / "r1", home=home,
        build_read=["~/.rustup", "~/.config"], build_write=["~/.cache", "~/.npm", "~/.cargo/registry", "~/.ssh"],
    )  # fmt: skip
    secrets = [home / p for p in (".ssh/id_rsa", ".aws/credentials", ".config/gh/hosts.yml", ".netrc", ".cargo/credentials.toml", "notes.txt")]  # fmt: skip
    toolchain = [home / ".rustup/toolchains/stable/bin/rustc", home / ".config/tool/settings.json"]
    caches = [home / ".cache/pip/wheel", home / ".npm/index", home / ".cargo/registry/crate"]
    seen = await inside(
        sandbox, root, [*secrets, *toolchain], [*caches, home / ".ssh/id_rsa", home / "new.txt", root / "target"],
        [listeners["run"], listeners["agent"], listeners["open"]],
    )  # fmt: skip
    for secret in secrets:  # ~/.config is shown read-only, yet gh's token in it is not
        assert seen["read"][str(secret)].endswith("Error"), (secret, seen["read"][str(secret)])
    assert seen["read"][str(toolchain[0])] == "toolchain"
    assert seen["read"][str(toolchain[1])] == "{}"
    assert all(seen["write"][str(c)] == "wrote" for c in caches), seen["write"]
    assert all((c.read_text() == "built") for c in caches), "cache writes persist"
    assert seen["write"][str(root / "target")] == "wrote"
    assert (home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY", "listing ~/.ssh shows nothing"
    assert not (home / "new.txt").exists(), "the rest of the home is a private, empty folder"
    assert seen["reach"][str(listeners["run"])] != "connected"
    assert seen["reach"][str(listeners["agent"])] != "connected"
    assert seen["reach"][str(listeners["open"])] == "connected", "the control: the probe works"


async def test_the_worktree_is_shown_at_the_checkouts_path(tmp_path: Path) -> None:
    """An editable install names the checkout; inside the sandbox that path is the worktree,
    while the checkout's installed dependencies (`.venv`) stay where they were."""
    checkout = tmp_path / "checkout"
    worktree = checkout / ".cardrunner" / "worktrees" / "card"
    for tree, value in ((checkout, "checkout"), (worktree, "worktree")):
        (tree / "src" / "pkg").mkdir(parents=True)
        (tree / "src" / "pkg" / "__init__.py").write_text(f"WHERE = {value!r}\n")
    site = checkout / ".venv" / "site"
    site.mkdir(parents=True)
    (site / "__editable__.pkg.pth").write_text(f"{checkout / 'src'}\n")
    sandbox = Sandbox.start(
        "bwrap", worktree, checkout / ".cardrunner" / "runs" / "r1", checkout=checkout,
        home=tmp_path / "no-home",
    )  # fmt: skip
    code = (
        f"import site, os; site.addsitedir({str(site)!r}); import pkg; "
        "print(pkg.WHERE, os.getcwd(), os.path.exists('.venv/site/__editable__.pkg.pth'))"
    )
    result = await run_command([PY, "-c", code], worktree, 60, {"PATH": os.environ["PATH"]}, groups=GROUPS, sandbox=sandbox)  # fmt: skip
    assert result.ok, result.output
    assert result.output.split() == ["worktree", str(checkout), "True"]
    assert "worktree" in sandbox.tree_note() and str(checkout) in sandbox.tree_note()
    assert (checkout / "src" / "pkg" / "__init__.py").read_text() == "WHERE = 'checkout'\n"
