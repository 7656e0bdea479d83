"""Backlog.md tasks as cards: read as Backlog.md means them, written back in its own format."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cardrunner.card.backlog import Board, board_of, state_of, status_of
from cardrunner.card.card import parse_card
from cardrunner.card.parse import read_card
from cardrunner.card.writeback import update_card_text

TASK = """---
id: TASK-7
title: Add greeting
status: {status}
assignee: ['@ann']
reporter: '@bob'
created_date: '2026-11-30 10:00'
labels: [cli]
milestone: m-1
dependencies: [TASK-3]
priority: high
ordinal: 1000
---

## Description

<!-- SECTION:DESCRIPTION:BEGIN -->
Say hello.
<!-- SECTION:DESCRIPTION:END -->

## Acceptance Criteria
<!-- AC:BEGIN -->
- [ ] #1 Prints hello
- [x] #2 Exits 0
<!-- AC:END -->

## Definition of Done
<!-- DOD:BEGIN -->
- [ ] #1 Tests pass
<!-- DOD:END -->
"""

BOARD = Board(("Backlog", "Doing", "In Review", "Blocked", "Shipped"), ("Tests pass", "Docs"))


def test_a_backlog_task_in_cards_reads_without_warnings_as_its_status_says() -> None:
    """The issue's four bugs: unknown-key warnings, New although Done, `#1`, glued AC:END."""
    card, problems = parse_card(TASK.format(status="Done"), Path("cards/task-7.md"))
    assert problems == [] and card is not None
    assert card.state == "Done"
    assert card.criteria == ["Prints hello", "Exits 0", "Tests pass"]
    assert card.criteria_lines == [22, 23, 28]
    assert card.description == "## Description\n\nSay hello."


def test_statuses_map_through_the_projects_own_list() -> None:
    states = [state_of(s, BOARD.statuses) for s in BOARD.statuses]
    assert states == ["New", "In Work", "Review", "Failed", "Done"]
    assert state_of("doing", BOARD.statuses) == "In Work"  # Backlog.md ignores case too
    assert state_of("Done", BOARD.statuses) is None
    fields, problems = read_card(TASK.format(status="Done"), BOARD)
    assert fields is None
    assert [p.message for p in problems] == [
        "unknown status 'Done' (this board's statuses: Backlog, Doing, In Review, Blocked, Shipped)"
    ]
    assert [p.line for p in problems] == [3]


def test_every_state_has_a_status_that_reads_back_as_it() -> None:
    for state in ("New", "In Work", "Review", "Failed", "Done"):
        assert state_of(status_of(state, BOARD.statuses), BOARD.statuses) == state
    plain = ("To Do", "In Progress", "Done")  # no Review: in progress; no Failed: to do again
    assert [status_of(s, plain) for s in ("New", "In Work", "Review", "Failed", "Done")] == [
        "To Do",
        "In Progress",
        "In Progress",
        "To Do",
        "Done",
    ]


def test_the_definition_of_done_is_added_once() -> None:
    fields, problems = read_card(TASK.format(status="Doing"), BOARD)
    assert problems == [] and fields is not None
    assert fields["state"] == "In Work"
    assert fields["criteria"] == ["Prints hello", "Exits 0", "Tests pass", "Docs"]


def test_the_board_is_the_projects_config(tmp_path: Path) -> None:
    tasks = tmp_path / "backlog" / "tasks"
    tasks.mkdir(parents=True)
    assert board_of(tasks / "task-1.md") is None
    config = tmp_path / "backlog" / "config.yml"
    config.write_text('statuses: ["A", "B", "C"]\ndefinition_of_done: ["Tests pass"]\n')
    assert board_of(tasks / "task-1.md") == Board(("A", "B", "C"), ("Tests pass",))
    config.write_text('statuses: ["A", "Z"]\n')  # a changed config is read again
    assert board_of(tasks / "task-1.md") == Board(("A", "Z"), ())


def test_a_run_writes_back_in_backlog_mds_format() -> None:
    text = TASK.format(status="Backlog")
    started = update_card_text(text, state="In Work", reason=None, board=BOARD)
    assert started == text.replace("status: Backlog", "status: Doing")
    run = {
        "id": "r1",
        "result": "done",
        "evidence": ["0: verified on abc — run_tests t1: ok", "3: verified on abc — x"],
    }
    done = update_card_text(started, state="Done", reason=None, run=run, board=BOARD)
    assert "status: Shipped\n" in done and "\nstate:" not in done
    assert "- [x] #1 Prints hello\n- [x] #2 Exits 0\n" in done
    assert "- [ ] #1 Tests pass\n- [x] #2 Docs\n<!-- DOD:END -->" in done
    notes = done.split("<!-- SECTION:NOTES:BEGIN -->\n", 1)[1]
    assert notes.startswith("cardrunner run r1: done\n- Prints hello: verified on abc")
    assert "- Docs: verified on abc — x\n<!-- SECTION:NOTES:END -->\n" in notes
    # a user's note stays; the next run's paragraph replaces the last run's
    mine = done.replace("<!-- SECTION:NOTES:BEGIN -->\n", "<!-- SECTION:NOTES:BEGIN -->\nMine.\n\n")
    again = update_card_text(mine, state="Done", run={**run, "id": "r2"}, board=BOARD)
    notes = again.split("<!-- SECTION:NOTES:BEGIN -->\n", 1)[1].split("<!-- SECTION:NOTES:END")[0]
    assert notes.startswith("Mine.\n\ncardrunner run r2: done\n") and "r1" not in notes
    fields, problems = read_card(again, BOARD)
    assert problems == [] and fields is not None and fields["state"] == "Done"
    assert fields["criteria"] == ["Prints hello", "Exits 0", "Tests pass", "Docs"]


_VALUES = st.one_of(
    st.just("[]"),
    st.just("['@a', \"@b\"]  # who"),
    st.just("'2026-11-30 10:00'"),
    st.integers(0, 10**6).map(str),
    st.text(st.sampled_from("abc XYZ-_"), min_size=1, max_size=12).map(lambda s: f'"{s}"'),
)


@given(
    st.lists(
        st.tuples(st.sampled_from(["assignee", "labels", "ordinal", "type", "x_own"]), _VALUES),
        max_size=6,
    )
)
def test_every_other_front_matter_byte_stays(keys: list[tuple[str, str]]) -> None:
    extra = "".join(f"{k}: {v}\n" for k, v in dict(keys).items())
    text = TASK.format(status="Backlog").replace("ordinal: 1000\n", extra)
    new = update_card_text(text, state="Failed", reason=None, board=BOARD)
    assert new == text.replace("status: Backlog\n", "status: Blocked\n")


@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1).filter(
            lambda s: s.strip() == s and s and not s.startswith(("#", "[", "<!--"))
        ),
        min_size=1,
        max_size=5,
    )
)
def test_criteria_between_the_markers_read_exactly(items: list[str]) -> None:
    listed = "".join(f"- [ ] #{i + 1} {item}\n" for i, item in enumerate(items))
    text = f"---\ntitle: t\nstatus: To Do\n---\n## Acceptance Criteria\n<!-- AC:BEGIN -->\n{listed}<!-- AC:END -->\n"
    fields, problems = read_card(text)
    assert fields is not None, problems
    assert fields["criteria"] == items
