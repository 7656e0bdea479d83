"""`make_plan` orders cards by `depends_on:`: each after what it needs, or skipped with why."""

from __future__ import annotations

from pathlib import Path

from cardrunner.board.plan import Selection, make_plan
from cardrunner.config.settings import Settings
from tests.unit.run.test_plan import add_cards, card, repo

__all__ = ["repo"]


def needing(title: str, depends: str, state: str = "New") -> str:
    text = card(title, f"Builds on {depends}.", state=state)
    return text.replace("category: Bug\n", f"category: Bug\ndepends_on: {depends}\n")


async def test_a_card_waits_for_its_dependencies_in_the_plan(repo: Path) -> None:
    add_cards(
        repo,
        a_profile=needing("Profile", "[Login, cards/c_db.md]"),
        b_login=needing("Login", "Database"),
        c_db=card("Database", "Tables."),
        d_alone=card("Alone", "Nothing else."),
    )
    plan = await make_plan(repo, Settings(), Selection())
    order = [(e.card, e.stage, e.needs) for e in plan.include]
    assert order == [
        ("cards/c_db.md", 0, []),
        ("cards/d_alone.md", 0, []),
        ("cards/b_login.md", 1, ["cards/c_db.md"]),
        ("cards/a_profile.md", 2, ["cards/b_login.md", "cards/c_db.md"]),
    ]
    assert plan.skipped == []


async def test_what_cannot_be_waited_for_is_skipped_with_the_reason(repo: Path) -> None:
    add_cards(
        repo,
        busy=card("Busy", "Someone runs it.", state="In Work"),
        waits=needing("Waits", "Busy"),
        then=needing("Then", "Waits"),
        loop_a=needing("Loop A", "Loop B"),
        loop_b=needing("Loop B", "Loop A"),
        ghost=needing("Ghost", "No such card"),
        fine=needing("Fine", "Finished"),
        finished=card("Finished", "Long ago.", state="Done"),
    )
    plan = await make_plan(repo, Settings(), Selection())
    assert [e.card for e in plan.include] == ["cards/fine.md"]
    why = {s.card: s.why for s in plan.skipped}
    assert why["cards/waits.md"] == 'waits for "Busy" (In Work), which this plan does not run'
    assert why["cards/then.md"] == 'waits for "Waits", which cannot run'
    assert why["cards/loop_a.md"] == why["cards/loop_b.md"] == "its dependencies form a cycle"
    assert why["cards/ghost.md"] == 'depends on "No such card", which is no card'


async def test_a_dependency_left_out_by_the_board_budget_holds_its_dependent(repo: Path) -> None:
    add_cards(repo, first=card("First", "One."), second=needing("Second", "First"))
    settings = Settings.model_validate({"limits": {"max_cost_usd": 1.0}})
    plan = await make_plan(repo, settings, Selection(budget_usd=0.5))
    assert plan.include == []
    why = {s.card: s.why for s in plan.skipped}
    assert why["cards/second.md"] == "waits for cards/first.md, which this plan does not schedule"
