"""The card index on real card files: what a scan, a catch-up pass and a re-read parse.

Parses are counted with the index's own counters (the same ones `cardrunner.debug.index`
reports), so a pass that parses what did not change fails here, whatever the timing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pygls.lsp.server import LanguageServer

from cardrunner.card.card import find_cards
from cardrunner.lsp.core import cardscan
from cardrunner.lsp.core.cardscan import BATCH, CHILD_MIN, list_card_files
from cardrunner.lsp.core.index import CardIndex

CARD = """---
title: Card {n}
state: {state}
---
Card {n}.

## Acceptance criteria

- It works.
"""


def write_board(root: Path, count: int) -> list[Path]:
    folder = root / "cards"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = folder / f"card-{n:04d}.md"
        path.write_text(CARD.format(n=n, state="New"))
        paths.append(path.resolve())
    return paths


def make_index(root: Path, racy_ns: int = 0) -> CardIndex:
    """An index over `root/cards`. `racy_ns=0` trusts a file's times as it was read
    (the default 2 s margin would make every file these tests just wrote "too fresh")."""
    return CardIndex(LanguageServer("test", "0"), lambda: root, lambda: "cards", racy_ns=racy_ns)


class Heard:
    """The `loaded` callback: every path it was told about, in order."""

    def __init__(self) -> None:
        self.paths: list[Path] = []
        self.batches = 0

    def __call__(self, paths: list[Path]) -> None:
        self.batches += 1
        self.paths += paths


async def test_a_big_board_is_parsed_by_the_scanner_and_a_catch_up_parses_nothing(
    tmp_path: Path,
) -> None:
    count = CHILD_MIN + 2 * BATCH + 5
    paths = write_board(tmp_path, count)
    index, heard = make_index(tmp_path), Heard()

    assert sorted(await index.scan(heard)) == paths
    assert index.stats.scanner_parses == count and index.stats.parses == 0
    assert sorted(heard.paths) == paths and heard.batches > 2  # batch by batch
    entry = index.get(paths[-1])
    assert entry is not None and entry.card is not None and entry.card.title == f"Card {count - 1}"

    # Nothing changed: the catch-up pass compares the files and reads none of them.
    assert await index.sync(Heard()) == []
    assert (index.stats.reads, index.stats.parses, index.stats.syncs) == (0, 0, 1)
    assert index.stats.scanner_parses == count  # and no second scan in the child either


async def test_a_catch_up_rereads_what_changed_even_with_its_mtime_put_back(
    tmp_path: Path,
) -> None:
    old = write_board(tmp_path, 5)
    index = make_index(tmp_path)
    await index.scan(Heard())
    assert index.stats.parses == 5  # a small board is parsed here

    # Same size, mtime put back: only the ctime says it changed — and that is enough.
    st = old[1].stat()
    old[1].write_text(CARD.format(n=1, state="Old"))
    os.utime(old[1], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert old[1].stat().st_size == st.st_size and old[1].stat().st_mtime_ns == st.st_mtime_ns
    old[2].write_text(old[2].read_text())  # written again, same text
    new = tmp_path / "cards" / "new.md"
    new.write_text(CARD.format(n=9, state="New"))
    old[4].unlink()

    changed = await index.sync(Heard())
    assert sorted(changed) == sorted([old[1], new.resolve(), old[4]])
    assert index.stats.parses == 5 + 2  # the changed one and the new one
    assert index.stats.reads == 5 + 3  # the scan's, then the changed, the new and card 2 …
    assert index.stats.unchanged == 1  # … whose text is equal: not parsed
    entry = index.get(old[1])
    assert entry is not None and entry.card is None  # "Old" is no state
    assert index.get(old[4]) is None


async def test_files_changed_right_before_their_read_are_compared_by_text(
    tmp_path: Path,
) -> None:
    paths = write_board(tmp_path, 4)
    index = make_index(tmp_path, racy_ns=3600 * 10**9)  # every file is "just written"
    await index.scan(Heard())
    assert await index.sync(Heard()) == []
    assert index.stats.reads == 4 + 4 and index.stats.unchanged == 4 and index.stats.parses == 4

    paths[3].write_text(CARD.format(n=3, state="Old"))
    assert await index.sync(Heard()) == [paths[3]]
    assert index.stats.parses == 5


async def test_the_watchers_reread_of_an_unchanged_card_parses_nothing(tmp_path: Path) -> None:
    paths = write_board(tmp_path, 3)
    index = make_index(tmp_path)
    await index.scan(Heard())
    temp = tmp_path / "cards" / ".card-0000.md.tmp"  # an editor's atomic save, same text
    temp.write_text(paths[0].read_text())
    os.replace(temp, paths[0])
    paths[1].write_text(CARD.format(n=1, state="Failed"))

    changed = await index.refresh(paths[:2], Heard())
    assert changed == [paths[1]]
    assert index.stats.parses == 3 + 1 and index.stats.unchanged == 1


async def test_what_was_installed_during_the_scan_is_not_replaced_by_the_scans_older_read(
    tmp_path: Path,
) -> None:
    paths = write_board(tmp_path, CHILD_MIN + 1)
    index = make_index(tmp_path)
    last = paths[-1]
    edited = CARD.format(n=999, state="Done")

    def loaded(batch: list[Path]) -> None:
        if index.get(last) is None and index.get(paths[0]) is not None:
            index.update(last, edited)  # the editor's buffer arrives while the scan runs

    await index.scan(loaded)
    entry = index.get(last)
    assert entry is not None and entry.text == edited
    assert index.stats.scanner_parses == CHILD_MIN  # the scanner's read of `last` was dropped


def test_the_scans_listing_finds_what_find_cards_finds(tmp_path: Path) -> None:
    cards = tmp_path / "cards"
    for name in (
        "a.md",
        "B.MARKDOWN",
        "sub/c.md",
        "sub/deeper/d.md",
        ".hidden.md",
        "#draft.md#",
        "backup.md~",
        "~lock.md",
        "notes.txt",
        ".git/e.md",
        "sub/.cache/f.md",
    ):
        (cards / name).parent.mkdir(parents=True, exist_ok=True)
        (cards / name).write_text(CARD.format(n=0, state="New"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "g.md").write_text(CARD.format(n=1, state="New"))
    (cards / "linked.md").symlink_to(elsewhere / "g.md")  # a card that lives elsewhere
    (cards / "linked-folder").symlink_to(elsewhere, target_is_directory=True)  # not entered
    (cards / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "via").symlink_to(tmp_path, target_is_directory=True)

    expected = {p.resolve() for p in find_cards(tmp_path, "cards")}
    assert set(list_card_files(tmp_path / "cards")) == expected
    assert set(list_card_files(tmp_path / "via" / "cards")) == expected  # a symlinked root
    assert (elsewhere / "g.md").resolve() in expected and len(expected) == 6
    assert list_card_files(tmp_path / "missing") == []


async def test_many_files_to_compare_go_to_the_scanner_and_are_not_parsed_again(
    tmp_path: Path,
) -> None:
    count = CHILD_MIN + 1
    write_board(tmp_path, count)
    index = make_index(tmp_path, racy_ns=3600 * 10**9)  # a fresh clone: every file too fresh
    await index.scan(Heard())
    assert await index.sync(Heard()) == []
    assert index.stats.scanner_parses == count and index.stats.unchanged == count
    assert index.stats.parses == 0 and index.stats.reads == 0  # nothing read or parsed here


async def test_when_the_scanner_cannot_run_the_cards_are_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = CHILD_MIN + 1
    paths = write_board(tmp_path, count)
    monkeypatch.setattr(cardscan, "MODULE", "cardrunner.no_such_scanner")  # exits at once
    index = make_index(tmp_path)
    assert sorted(await index.scan(Heard())) == paths
    assert index.stats.scanner_parses == 0 and index.stats.parses == count
    assert all(index.get(p) is not None for p in paths)
