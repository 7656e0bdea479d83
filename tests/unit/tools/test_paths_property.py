"""Property: whatever path the model invents, an accepted one lies inside an allowed folder.

Paths are built from the pieces escapes are made of (`..`, absolute prefixes, case variants of
`.git`, names of symlinks that point outside or into `.git`, unicode). Every accepted path is
checked against an independent resolver written here, so a bug shared with `os.path.realpath`
use in the guard would still show.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardrunner.agent.toolpool import ToolError
from cardrunner.tools.guard import PathGuard, is_forbidden_name


def independent_realpath(path: str, hops: int = 0) -> str | None:
    """Resolve `path` component by component with lstat/readlink; None on a symlink loop."""
    if hops > 40:
        return None
    current = "/"
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            resolved = independent_realpath(os.path.join(current, target), hops + 1)
            if resolved is None:
                return None
            current = resolved
        else:
            current = candidate
    return current


class World:
    def __init__(self, base: Path) -> None:
        base = Path(os.path.realpath(base))
        self.root = base / "ws"
        self.outside = base / "outside"
        src, docs, git = self.root / "src", self.root / "docs", self.root / ".git"
        for folder in (src / "pkg", docs, git, self.root / ".cardrunner", self.outside / "deep"):
            folder.mkdir(parents=True)
        (git / "config").write_text("")
        (self.outside / "secret").write_text("")
        (src / "pkg" / "a.py").write_text("")
        links = {
            src / "out_file": self.outside / "secret",
            src / "out_dir": self.outside,
            src / "out_rel": Path("../../outside/deep"),
            src / "git_link": git,
            src / "cr_link": Path("../.cardrunner"),
            src / "up": Path(".."),
            src / "good": Path("pkg"),
            src / "loop": Path("loop"),
            src / "dangling_out": self.outside / "nothing" / "here",
            docs / "to_src": Path("../src"),
            self.root / "src_alias": Path("src"),
        }
        for link, target in links.items():
            link.symlink_to(target)
        self.link_names = [p.name for p in links]
        self.guard = PathGuard(self.root, read=["docs"], write=["src"])
        self.write_folders = [src]
        self.read_folders = [src, docs]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("paths"))


SEGMENTS = [
    "..",
    ".",
    "",
    "src",
    "docs",
    "pkg",
    "a.py",
    "new.txt",
    ".git",
    ".GIT",
    ".Git",
    ".gIt.",
    ".git ",
    ".g\u200cit",
    "git~1",
    ".cardrunner",
    ".CARDRUNNER",
    "ws",
    "outside",
    "secret",
    "deep",
    "ü",
    "日本語",
    "\udcff",
    "a\\..\\b",
    "...",
    "~",
    "-",
    " x ",
    "\u0130",
    "\ufeff",
]


def paths(world: World) -> st.SearchStrategy[str]:
    """Paths from a byte string: byte 0 picks a prefix, every further byte a segment.

    One cheap draw per example keeps 10,000 examples fast; shrinking still works on the bytes.
    """
    pieces = SEGMENTS + world.link_names
    prefixes = [
        "",
        "",
        "./",
        "/",
        "//",
        f"{world.root}/",
        f"{world.root}/src/",
        f"{world.outside}/",
    ]

    def build(data: bytes) -> str:
        body = "/".join(pieces[b % len(pieces)] for b in data[1:])
        trailing = "/" if data[0] & 0x80 else ""
        return prefixes[data[0] % len(prefixes)] + body + trailing

    return st.binary(min_size=1, max_size=9).map(build)


def check_accepted(world: World, raw: str, result: Path, folders: list[Path]) -> None:
    assert result.is_absolute()
    assert any(result == f or result.is_relative_to(f) for f in folders), (raw, result)
    rel = result.relative_to(world.root)
    assert not any(is_forbidden_name(part) for part in rel.parts), (raw, result)
    assert not any(is_forbidden_name(p) for p in raw.replace("\\", "/").split("/")), raw
    assert independent_realpath(str(result)) == str(result), (raw, result)  # no symlink left
    expected = independent_realpath(os.path.join(world.root, raw))
    assert expected in (None, str(result)), (raw, result)  # None: a loop, dropped by `..`


def test_property_every_accepted_path_is_inside(world: World) -> None:
    seen = {"read": 0, "write": 0, "tried": 0}

    @settings(
        max_examples=10_000,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(raw=paths(world))
    def check(raw: str) -> None:
        seen["tried"] += 1
        for kind, resolve, folders in (
            ("write", world.guard.resolve_write, world.write_folders),
            ("read", world.guard.resolve_read, world.read_folders),
        ):
            try:
                result = resolve(raw)
            except ToolError:
                continue
            seen[kind] += 1
            check_accepted(world, raw, result, folders)

    check()
    # The generator must reach accepted paths, or the property would hold vacuously.
    assert seen["tried"] >= 10_000
    assert seen["write"] > 100 and seen["read"] > seen["write"]


@pytest.mark.parametrize(
    "raw",
    [
        "src/out_rel/x",
        "src/up/src/../.git/config",
        "src/cr_link/runs",
        "docs/to_src/../../x",
        "src/dangling_out",
        "src/git_link",
        "src_alias/../../outside/secret",
        "src/.g\u200cit/x",
    ],
)
def test_known_escapes(world: World, raw: str) -> None:
    with pytest.raises(ToolError):
        world.guard.resolve_write(raw)


def test_known_good(world: World) -> None:
    src = world.root / "src"
    assert world.guard.resolve_write("src_alias/pkg/a.py") == src / "pkg" / "a.py"
    assert world.guard.resolve_write("src/up/src/good/a.py") == src / "pkg" / "a.py"
    assert world.guard.resolve_read("docs/to_src/new.txt") == src / "new.txt"
