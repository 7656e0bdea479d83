"""The model's own file tools never read a secret store, whatever `paths.read` says.

The sandbox hides `~/.aws` from commands; a repository that widens `paths.read` to `/` would
otherwise hand it to `read_file`. A real home stand-in under tmp, real symlinks, the real tools
through the real gate (`ToolPool`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cardrunner.agent.events import Event
from cardrunner.agent.toolpool import ToolContext, ToolPool
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
STORES = (
    ".aws/credentials",
    ".ssh/id_ed25519",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".config/gcloud/credentials.db",
    ".config/git/credentials",
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for rel in (*STORES, "notes/todo.txt"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"secret = {SECRET}\n" if rel != "notes/todo.txt" else "todo\n")
    return home


@pytest.fixture
def pool(tmp_path: Path, home: Path) -> ToolPool:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "creds").symlink_to(home / ".aws" / "credentials")
    (root / ".netrc").write_text(f"machine github.com password {SECRET}\n")
    guard = PathGuard(root, read=[".", "/"], write=["src", "/"], home=home)
    return ToolPool(file_tools(guard))


async def call(pool: ToolPool, name: str, **args: object) -> tuple[str, bool]:
    events: list[Event] = []
    result = await pool.execute(name, args, ToolContext(1, events.append))
    return result.text, result.is_error


@pytest.mark.parametrize("rel", STORES)
async def test_no_home_secret_store_is_read_or_written(
    pool: ToolPool, home: Path, rel: str
) -> None:
    text, error = await call(pool, "read_file", path=str(home / rel))
    assert error and "secret store" in text and SECRET not in text, text
    text, error = await call(pool, "write_file", path=str(home / rel), content="x")
    assert error and "secret store" in text, text
    assert (home / rel).read_text() == f"secret = {SECRET}\n"


@pytest.mark.parametrize(
    "path",
    [
        "/proc/self/environ",
        "/proc/thread-self/environ",
        "/proc/self/cmdline",
        "/proc/1/environ",
        "PID",
    ],
)
async def test_no_process_environment_is_read(pool: ToolPool, path: str) -> None:
    path = f"/proc/{os.getpid()}/environ" if path == "PID" else path
    text, error = await call(pool, "read_file", path=path)
    assert error and "secret store" in text, text


async def test_a_symlink_or_a_credential_file_in_the_repository_is_refused(pool: ToolPool) -> None:
    for path in ("src/creds", ".netrc"):
        text, error = await call(pool, "read_file", path=path)
        assert error and SECRET not in text, (path, text)
    text, error = await call(pool, "read_file", path="src/app.py")
    assert not error and "print('hi')" in text


async def test_a_listing_does_not_name_a_secret_store(pool: ToolPool, home: Path) -> None:
    text, error = await call(pool, "list_files", path=str(home), recursive=True)
    assert not error and "notes/todo.txt" in text, text
    for name in (".aws", ".ssh", ".git-credentials", ".config/gh", ".netrc", ".kube", ".docker"):
        assert name not in text, (name, text)
    text, error = await call(pool, "list_files", path=".", recursive=False)
    assert ".netrc" not in text and "src/" in text, text
