"""Every package folder's README.md names each of its modules, and names nothing that is not there.

A newcomer finds which room is whose from these one-line-per-file lists, so a list that lags a
move is worse than none: it sends the reader to a module that is gone, or hides one that is new.
A room is every folder of the package with an `__init__.py`, except the demo's workspace, which
is the template of the demo repository (its README.md is that repository's). A list entry is a
Markdown bullet that starts with a backticked name: `name.py` for a module, `name/` for a
sub-folder, or any other file the room keeps beside its modules (`instructions.md`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "cardrunner"
NOT_ROOMS = {PACKAGE / "demo" / "workspace"}
ENTRY = re.compile(r"^- `([^`]+)`", flags=re.M)


def rooms() -> list[Path]:
    """Every package folder under server/cardrunner, the package itself excepted."""
    found = (init.parent for init in PACKAGE.rglob("__init__.py"))
    return sorted(
        room
        for room in found
        if room != PACKAGE and not any(room.is_relative_to(skip) for skip in NOT_ROOMS)
    )


def entries(room: Path) -> list[str]:
    return ENTRY.findall((room / "README.md").read_text(encoding="utf-8"))


def room_id(room: Path) -> str:
    return room.relative_to(PACKAGE).as_posix()


ROOMS = rooms()


def test_the_rooms_are_found() -> None:
    """Guards the discovery itself: an empty or partial list would make every test below pass."""
    names = {room_id(room) for room in ROOMS}
    assert {"cli", "lsp", "lsp/core", "lsp/features", "tools/mcp", "run", "workers"} <= names
    assert not any(name.startswith("demo/workspace") for name in names)


@pytest.mark.parametrize("room", ROOMS, ids=room_id)
def test_the_room_has_a_readme_with_a_heading_and_a_sentence(room: Path) -> None:
    readme = room / "README.md"
    assert readme.is_file(), f"{room_id(room)}/ has no README.md"
    heading, _, rest = readme.read_text(encoding="utf-8").partition("\n")
    assert heading.startswith(f"# {room_id(room)}/"), heading
    intro = rest.split("\n- ", 1)[0].strip()
    assert intro, f"{room_id(room)}/README.md says nothing before its list"


@pytest.mark.parametrize("room", ROOMS, ids=room_id)
def test_every_module_of_the_room_is_listed(room: Path) -> None:
    listed = set(entries(room))
    modules = {path.name for path in room.glob("*.py") if path.name != "__init__.py"}
    folders = {f"{path.name}/" for path in room.iterdir() if (path / "__init__.py").is_file()}
    missing = sorted((modules | folders) - listed)
    assert not missing, f"{room_id(room)}/README.md does not list {missing}"


@pytest.mark.parametrize("room", ROOMS, ids=room_id)
def test_everything_listed_exists(room: Path) -> None:
    listed = entries(room)
    assert listed, f"{room_id(room)}/README.md lists nothing"
    gone = [name for name in listed if not (room / name.rstrip("/")).exists()]
    assert not gone, f"{room_id(room)}/README.md lists what is not there: {gone}"
    assert len(listed) == len(set(listed)), f"{room_id(room)}/README.md lists a name twice"
