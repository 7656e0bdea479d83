"""`make_plan` on real repositories: selection, overlaps from history and text, the board budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.board.plan import PlanError, Selection, TrackedFiles, make_plan, named_files
from cardrunner.config.settings import Settings
from tests.support.project import git, slug_of


def card(title: str, body: str, state: str = "New", category: str = "Bug") -> str:
    return (
        f"---\ntitle: {title}\nstate: {state}\ncategory: {category}\n---\n{body}\n\n"
        "**Acceptance criteria**\n\n- It works.\n"
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for rel in ("src/calc.py", "src/greet.py", "src/ui/view.py", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "cards").mkdir()
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "Dev")
    return tmp_path


def add_cards(root: Path, **cards: str) -> None:
    for name, text in cards.items():
        (root / "cards" / f"{name}.md").write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "cards")


async def test_new_cards_become_matrix_entries_with_branch_and_budget(repo: Path) -> None:
    add_cards(
        repo,
        add=card("Add", "Adding fails."),
        done=card("Old", "Was done.", state="Done"),
        feature=card("Greet", "Say hello.", category="Feature"),
    )
    settings = Settings.model_validate({"limits": {"max_rounds": 9, "max_cost_usd": 1.5}})
    plan = await make_plan(repo, settings, Selection())
    assert [(e.card, e.slug, e.branch) for e in plan.include] == [
        ("cards/add.md", slug_of("cards/add.md"), f"cards/{slug_of('cards/add.md')}"),
        ("cards/feature.md", slug_of("cards/feature.md"), f"cards/{slug_of('cards/feature.md')}"),
    ]
    assert plan.include[0].budget.model_dump() == {
        "max_rounds": 9,
        "max_tokens": 400000,
        "max_cost_usd": 1.5,
    }
    assert plan.conflicts == [] and plan.skipped == []
    only_bugs = await make_plan(repo, settings, Selection(categories=["bug"]))
    assert [e.slug for e in only_bugs.include] == [slug_of("cards/add.md")]
    done = await make_plan(repo, settings, Selection(states=["Done"]))
    assert [e.slug for e in done.include] == [slug_of("cards/done.md")]
    by_path = await make_plan(repo, settings, Selection(paths=[repo / "cards" / "feature.md"]))
    assert [e.slug for e in by_path.include] == [slug_of("cards/feature.md")]


async def test_cards_naming_the_same_file_are_a_conflict(repo: Path) -> None:
    add_cards(
        repo,
        a=card("A", "In `src/calc.py`, add is wrong."),
        b=card("B", "The calc.py module needs a docstring."),
        c=card("C", "Rename things in src/ui/."),
        d=card("D", "Polish the README.md, and greet.py."),
    )
    plan = await make_plan(repo, Settings(), Selection())
    assert [(c.cards, c.files) for c in plan.conflicts] == [
        (("cards/a.md", "cards/b.md"), ["src/calc.py"])
    ]
    assert len(plan.include) == 4


async def test_history_of_past_runs_counts_as_what_a_card_touches(repo: Path) -> None:
    add_cards(repo, a=card("A", "Make it faster."), b=card("B", "Fix src/ui/view.py please."))
    (repo / "src" / "ui" / "view.py").write_text("x = 2\n")
    git(repo, "commit", "-qam", f"card: A\n\nFaster.\n\nCard: {slug_of('cards/a.md')}\nRun: r1\n")
    plan = await make_plan(repo, Settings(), Selection())
    assert [(c.cards, c.files) for c in plan.conflicts] == [
        (("cards/a.md", "cards/b.md"), ["src/ui/view.py"])
    ]
    deferred = await make_plan(repo, Settings(), Selection(defer_conflicts=True))
    assert [e.slug for e in deferred.include] == [
        slug_of("cards/a.md")
    ] and deferred.conflicts == []
    assert deferred.skipped[0].card == "cards/b.md"
    assert "cards/a.md" in deferred.skipped[0].why


@pytest.mark.parametrize(
    "record",
    [
        "last_run:\n  id: r1\n  result: done\n  commit: {sha}\n",
        "runs:\n- id: r1\n  result: done\n  commit: {sha}\n",  # a card from before last_run
    ],
)
async def test_a_commit_recorded_on_the_card_counts_too(repo: Path, record: str) -> None:
    (repo / "src" / "greet.py").write_text("x = 3\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "no trailer")
    sha = git(repo, "rev-parse", "HEAD").strip()
    runs = record.format(sha=sha)
    first = card("A", "Greeting.").replace("category: Bug\n", f"category: Bug\n{runs}")
    add_cards(repo, a=first, b=card("B", "`src/greet.py` says Hallo."))
    plan = await make_plan(repo, Settings(), Selection())
    assert [c.files for c in plan.conflicts] == [["src/greet.py"]]


async def test_a_commit_named_in_an_older_card_commit_counts_too(repo: Path) -> None:
    """The card keeps only its last run; an earlier run kept on a branch of its own (its commit
    not on HEAD) is known from the `Commit:` trailer of that run's card commit."""
    add_cards(repo, a=card("A", "Greeting."), b=card("B", "`src/greet.py` says Hallo."))
    git(repo, "switch", "-qc", "cards/a")
    (repo / "src" / "greet.py").write_text("x = 3\n")
    git(repo, "commit", "-qam", f"greet\n\nCard: {slug_of('cards/a.md')}\nRun: r1\n")
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "main")
    reviewed = card("A", "Greeting.", state="Review")
    (repo / "cards" / "a.md").write_text(reviewed.replace("Bug\n", "Bug\nlast_run: {id: r1}\n"))
    trailers = (
        f"Card: {slug_of('cards/a.md')}\nRun: r1\nResult: done\nCommit: {sha}\nBranch: cards/a\n"
    )
    git(repo, "commit", "-qam", f"card: A → Review\n\nThe card's state.\n\n{trailers}")
    later = card("A", "Greeting.").replace("Bug\n", "Bug\nlast_run: {id: r2}\n")
    add_cards(repo, a=later)
    plan = await make_plan(repo, Settings(), Selection())
    assert [c.files for c in plan.conflicts] == [["src/greet.py"]]


async def test_the_board_budget_stops_scheduling(repo: Path) -> None:
    add_cards(repo, **{name: card(name, "Work.") for name in ("a", "b", "c")})
    settings = Settings.model_validate({"limits": {"max_cost_usd": 2.0}})
    plan = await make_plan(repo, settings, Selection(budget_usd=5.0))
    assert [e.slug for e in plan.include] == [slug_of("cards/a.md"), slug_of("cards/b.md")]
    assert plan.scheduled_usd == 4.0 and plan.budget_usd == 5.0
    assert [(s.card, s.why) for s in plan.skipped] == [
        ("cards/c.md", "the board budget of $5.00 is reached")
    ]
    cheaper = await make_plan(repo, settings, Selection(budget_usd=5.0, max_cost_usd=1.0))
    assert len(cheaper.include) == 3 and cheaper.include[0].budget.max_cost_usd == 1.0


async def test_another_cards_history_is_never_this_cards(repo: Path) -> None:
    """`cards/a.md` and `cards/sub/A.md` read alike; only the first one's run touched view.py,
    and a trailer from before identities had a hash (`Card: a`) names neither of them."""
    add_cards(repo, a=card("A", "Make it faster."), b=card("B", "Fix src/ui/view.py please."))
    (repo / "cards" / "sub").mkdir()
    (repo / "cards" / "sub" / "A.md").write_text(card("A too", "Speed."))
    (repo / "src" / "calc.py").write_text("x = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "card: A\n\nOld.\n\nCard: a\nRun: r0\n")
    (repo / "src" / "ui" / "view.py").write_text("x = 2\n")
    git(repo, "commit", "-qam", f"card: A\n\nFaster.\n\nCard: {slug_of('cards/a.md')}\nRun: r1\n")
    plan = await make_plan(repo, Settings(), Selection())
    assert [(c.cards, c.files) for c in plan.conflicts] == [
        (("cards/a.md", "cards/b.md"), ["src/ui/view.py"])
    ]
    assert len({e.slug for e in plan.include}) == 3


async def test_a_board_budget_without_a_card_budget_is_refused(repo: Path) -> None:
    add_cards(repo, a=card("A", "Work."))
    off = Settings.model_validate({"limits": {"max_cost_usd": 0}})  # the default is $2.00
    with pytest.raises(PlanError, match="max_cost_usd"):
        await make_plan(repo, off, Selection(budget_usd=5.0))
    plan = await make_plan(repo, Settings(), Selection(budget_usd=5.0))
    assert plan.include[0].budget.max_cost_usd == 2.0


async def test_an_invalid_card_is_skipped_and_says_why(repo: Path) -> None:
    add_cards(repo, a=card("A", "Work."), broken="---\ntitle: [\n---\n")
    plan = await make_plan(repo, Settings(), Selection())
    assert [e.slug for e in plan.include] == [slug_of("cards/a.md")]
    assert plan.skipped[0].card == "cards/broken.md"
    assert plan.skipped[0].why.startswith("not a valid card")


def test_paths_in_command_lines_do_not_count() -> None:
    tracked = TrackedFiles(["scripts/build.py", "tests/unit/test_a.py", "src/calc.py"])
    text = (
        "- `python scripts/build.py` and `python -m pytest -q tests/unit` pass.\n"
        "```\npython -m pytest tests/unit/test_a.py\n```\nChange `src/calc.py`."
    )
    assert named_files(text, tracked) == {"src/calc.py"}


def test_named_files_by_path_folder_and_file_name() -> None:
    tracked = TrackedFiles(
        ["src/calc.py", "src/ui/view.py", "lib/calc.py", "README.md", "docs/a.md"]
    )
    text = "See ./src/ui/. Then calc.py, and README.md. Not src/missing.py nor 3.5 or e.g."
    assert named_files(text, tracked) == {
        "src/ui/view.py",
        "src/calc.py",
        "lib/calc.py",
        "README.md",
    }
