"""The file tools and their path guard, on a real directory tree with real symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cardrunner.agent.events import Event
from cardrunner.agent.toolpool import MAX_RESULT_CHARS, ToolContext, ToolError, ToolPool
from cardrunner.tools.files import file_tools
from cardrunner.tools.guard import PathGuard


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "docs").mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".cardrunner").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "docs" / "readme.md").write_text("# docs\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "src" / "evil_file").symlink_to(outside / "secret.txt")
    (root / "src" / "evil_dir").symlink_to(outside)
    (root / "src" / "to_git").symlink_to(root / ".git")
    (root / "src" / "good_link").symlink_to(root / "src" / "pkg")
    return root


@pytest.fixture
def guard(ws: Path) -> PathGuard:
    return PathGuard(ws, read=["docs"], write=["src", "app/"])


def refused(fn: object, path: str) -> str:
    with pytest.raises(ToolError) as info:
        fn(path)  # type: ignore[operator]
    return str(info.value)


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "src/../docs/readme.md",  # readable, not writable
        "/etc/passwd",
        "src/evil_file",
        "src/evil_dir/secret.txt",
        "src/evil_dir/new_file.txt",  # not existing yet, parent is a symlink outside
        "src/to_git/config",
        ".git/config",
        "src/.GIT/x",
        "src/.Git./x",
        ".cardrunner/runs/x.jsonl",
        "src/x\x00y",
        "",
        "   ",
        "README.md",
    ],
)
def test_write_escapes_are_refused(guard: PathGuard, path: str) -> None:
    refused(guard.resolve_write, path)
    assert not guard.is_writable(path)


def test_refusal_tells_the_model_what_to_do(guard: PathGuard) -> None:
    message = refused(guard.resolve_write, "src/../../etc/passwd")
    assert message == (
        "src/../../etc/passwd is outside the folders you may write: src, app. "
        "Use a path relative to the workspace root."
    )
    assert "may read: src, app, docs" in refused(guard.resolve_read, "../outside/secret.txt")
    assert ".git" in refused(guard.resolve_read, ".git/config")


def test_allowed_paths_resolve_inside(ws: Path, guard: PathGuard) -> None:
    real = Path(os.path.realpath(ws))
    assert guard.resolve_write("src/main.py") == real / "src" / "main.py"
    assert guard.resolve_write("./src/pkg/../main.py") == real / "src" / "main.py"
    assert (
        guard.resolve_write("app/new/deep/file.txt") == real / "app" / "new" / "deep" / "file.txt"
    )
    assert guard.resolve_write(str(real / "src" / "x.py")) == real / "src" / "x.py"
    assert guard.resolve_write("src/good_link/mod.py") == real / "src" / "pkg" / "mod.py"
    assert guard.resolve_read("docs/readme.md") == real / "docs" / "readme.md"
    assert guard.resolve_read("src/main.py") == real / "src" / "main.py"  # write implies read
    assert guard.is_writable("src/anything.py")


def test_symlink_loop_is_refused(ws: Path, guard: PathGuard) -> None:
    (ws / "src" / "loop").symlink_to(ws / "src" / "loop")
    assert "cannot be resolved" in refused(guard.resolve_write, "src/loop/x")


def test_allowed_folder_resolved_once(tmp_path: Path) -> None:
    elsewhere = tmp_path / "real_src"
    elsewhere.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").symlink_to(elsewhere)
    guard = PathGuard(root, read=[], write=["src"])
    resolved = guard.resolve_write("src/a.py")
    assert resolved == Path(os.path.realpath(elsewhere)) / "a.py"
    assert guard.display(resolved) == "src/a.py"


def ctx(events: list[Event] | None = None) -> ToolContext:
    sink = events if events is not None else []
    return ToolContext(round=1, emit=sink.append)


@pytest.fixture
def pool(guard: PathGuard) -> ToolPool:
    return ToolPool(file_tools(guard))


async def test_list_files(ws: Path, pool: ToolPool) -> None:
    (ws / "src" / "__pycache__").mkdir()
    (ws / "src" / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    result = await pool.execute("list_files", {"path": "src"}, ctx())
    assert not result.is_error, result.text
    assert result.text.splitlines() == [  # symlinked folders are not walked
        "src/evil_file",
        "src/main.py",
        "src/pkg/mod.py",
    ]
    flat = await pool.execute("list_files", {"path": "src", "recursive": False}, ctx())
    assert "src/pkg/" in flat.text.splitlines() and "src/pkg/mod.py" not in flat.text
    outside = await pool.execute("list_files", {"path": ".."}, ctx())
    assert outside.is_error and "outside the folders you may read" in outside.text


async def test_list_files_caps_entries(ws: Path, pool: ToolPool) -> None:
    many = ws / "app" / "many"
    many.mkdir()
    for i in range(620):
        (many / f"{i:03d}").write_text("")
    result = await pool.execute("list_files", {"path": "app"}, ctx())
    *lines, note = result.text.splitlines()
    assert len(result.text) <= MAX_RESULT_CHARS
    assert lines == [f"app/many/{i:03d}" for i in range(len(lines))]
    assert note == f"[{620 - len(lines)} more entries not shown: list a narrower folder]"
    assert 250 < len(lines) <= 500


async def test_read_file_text_binary_and_missing(ws: Path, pool: ToolPool) -> None:
    ok = await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    assert (ok.text, ok.is_error) == ("print('hi')\n", False)
    (ws / "app" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    binary = await pool.execute("read_file", {"path": "app/logo.png"}, ctx())
    assert binary.is_error and "binary file" in binary.text
    missing = await pool.execute("read_file", {"path": "src/nope.py"}, ctx())
    assert missing.is_error and "does not exist" in missing.text
    folder = await pool.execute("read_file", {"path": "src/pkg"}, ctx())
    assert folder.is_error and "is a folder" in folder.text
    escape = await pool.execute("read_file", {"path": "src/evil_file"}, ctx())
    assert escape.is_error and "secret" not in escape.text.replace("secret.txt", "")


async def test_read_file_pages(ws: Path, pool: ToolPool) -> None:
    (ws / "src" / "long.py").write_text("".join(f"line {i}\n" for i in range(1, 2001)))
    whole = await pool.execute("read_file", {"path": "src/long.py"}, ctx())
    assert len(whole.text) <= MAX_RESULT_CHARS
    assert whole.text.startswith("[src/long.py: lines 1-")
    assert "start_line=" in whole.text.splitlines()[-1]
    part = await pool.execute(
        "read_file", {"path": "src/long.py", "start_line": 100, "max_lines": 3}, ctx()
    )
    assert part.text == (
        "[src/long.py: lines 100-102 of 2000]\nline 100\nline 101\nline 102\n\n"
        "[call read_file with start_line=103 to read on]"
    )
    past = await pool.execute("read_file", {"path": "src/long.py", "start_line": 5000}, ctx())
    assert past.is_error and "only 2000 lines" in past.text


async def test_write_file_creates_folders_and_keeps_mode(ws: Path, pool: ToolPool) -> None:
    result = await pool.execute(
        "write_file", {"path": "app/new/deep/x.txt", "content": "héllo\n"}, ctx()
    )
    assert result.text == "wrote 7 bytes to app/new/deep/x.txt"
    assert (ws / "app" / "new" / "deep" / "x.txt").read_text() == "héllo\n"
    script = ws / "src" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    await pool.execute("write_file", {"path": "src/run.sh", "content": "#!/bin/sh\necho\n"}, ctx())
    assert script.stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in (ws / "src").iterdir() if p.name.endswith(".tmp")) == []


async def test_write_file_refuses_escapes(ws: Path, tmp_path: Path, pool: ToolPool) -> None:
    for path in ["src/evil_dir/planted.txt", "../outside/planted.txt", "docs/readme.md"]:
        result = await pool.execute("write_file", {"path": path, "content": "x"}, ctx())
        assert result.is_error, path
    assert not (tmp_path / "outside" / "planted.txt").exists()
    assert (ws / "docs" / "readme.md").read_text() == "# docs\n"


async def test_write_conflict_keeps_the_users_text(ws: Path, pool: ToolPool) -> None:
    target = ws / "src" / "main.py"
    first = await pool.execute("write_file", {"path": "src/main.py", "content": "v1\n"}, ctx())
    assert not first.is_error
    again = await pool.execute("write_file", {"path": "src/main.py", "content": "v2\n"}, ctx())
    assert not again.is_error  # nobody else touched it
    target.write_text("the user's edit\n")
    clash = await pool.execute("write_file", {"path": "src/main.py", "content": "v3\n"}, ctx())
    assert clash.is_error
    assert clash.text == (
        "src/main.py was changed outside this run since you last read or wrote it; "
        "the other version is kept. Read it again and merge"
    )
    assert target.read_text() == "the user's edit\n"
    seen = await pool.execute("read_file", {"path": "src/main.py"}, ctx())
    assert seen.text == "the user's edit\n"
    merged = await pool.execute(
        "write_file", {"path": "src/main.py", "content": "the user's edit\nv3\n"}, ctx()
    )
    assert not merged.is_error
    assert target.read_text() == "the user's edit\nv3\n"


async def test_deleted_file_counts_as_changed(ws: Path, pool: ToolPool) -> None:
    await pool.execute("write_file", {"path": "src/gone.py", "content": "x\n"}, ctx())
    (ws / "src" / "gone.py").unlink()
    clash = await pool.execute("write_file", {"path": "src/gone.py", "content": "y\n"}, ctx())
    assert clash.is_error and not (ws / "src" / "gone.py").exists()
    await pool.execute("read_file", {"path": "src/gone.py"}, ctx())
    after = await pool.execute("write_file", {"path": "src/gone.py", "content": "y\n"}, ctx())
    assert not after.is_error


def test_descriptions_name_the_folders(guard: PathGuard) -> None:
    by_name = {t.name: t for t in file_tools(guard)}
    assert "Writable folders: src, app." in by_name["write_file"].description
    assert "Readable folders: src, app, docs." in by_name["read_file"].description


async def test_a_big_folder_is_shown_by_its_shape(ws: Path) -> None:
    """As webpack's root: 500 paths of `.changeset/` hid `lib/` and `test/` (issue 41)."""
    (ws / ".gitignore").write_text("# build\n/generated/\n*.log\n!keep\n")
    for folder, n in [(".changeset", 600), ("lib", 300), ("test", 700), ("generated", 40)]:
        (ws / folder).mkdir()
        for i in range(n):
            (ws / folder / f"f{i:04d}.js").write_text("")
    (ws / "lib" / "deep" / "er").mkdir(parents=True)
    (ws / "lib" / "deep" / "er" / "x.js").write_text("")
    (ws / "node_modules" / "dep").mkdir(parents=True)
    (ws / "node_modules" / "dep" / "index.js").write_text("")
    for name in ("package.json", "README.md"):
        (ws / name).write_text("{}")
    pool = ToolPool(file_tools(PathGuard(ws, read=["."], write=["src"])))
    result = await pool.execute("list_files", {"path": "."}, ctx())
    assert not result.is_error and len(result.text) <= MAX_RESULT_CHARS, result.text
    head, *folders, files = result.text.splitlines()
    assert head.startswith(". holds 1,648 files, too many to list one by one")
    assert folders == [
        "docs/  1 files",
        "lib/  301 files",
        "src/  3 files",
        "test/  700 files",
        ".changeset/  600 files",
        "generated/  40 files (ignored or generated)",
        "node_modules/  not listed (ignored)",
    ]
    assert files == "Files directly in . (3): .gitignore, README.md, package.json"
    inner = await pool.execute("list_files", {"path": "lib"}, ctx())
    assert "lib/deep/er/x.js" in inner.text, "a folder that fits is listed as before"
