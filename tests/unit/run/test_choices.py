"""A card's choices within the settings' caps: less is taken, more is clamped and said."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardrunner.card.card import Card, parse_card
from cardrunner.config.plainsettings import SettingsView
from cardrunner.config.settings import Settings
from cardrunner.run.choices import card_settings, card_view, choice_problems


def card_with(front: str) -> tuple[Card, list[str]]:
    text = f"---\ntitle: A card\n{front}---\nText.\n\n## Acceptance criteria\n\n- It works.\n"
    card, problems = parse_card(text, Path("cards/a.md"))
    errors = [p.message for p in problems if p.severity == "error"]
    empty = Card(
        path=Path("x"), title="", state="New", category=None, description="", criteria=[],
        criteria_lines=[], title_line=0, reason=None, source=None, runs=[], last_entry=None,
        text="",
    )  # fmt: skip
    return card or empty, errors


def settings() -> Settings:
    return Settings.model_validate(
        {
            "limits": {"max_rounds": 30, "max_tokens": 0, "max_cost_usd": 2.0},
            "options": {"effort": "medium"},
        }
    )


def test_less_is_taken_more_is_clamped_and_said() -> None:
    card, errors = card_with(
        "model: claude-opus-5-5\neffort: max\nmax_rounds: 99\nmax_cost_usd: 0.5\n"
        "max_tokens: 50000\n"
    )
    assert errors == [] and card is not None
    chosen, notes = card_settings(settings(), card)
    assert chosen.model == "claude-opus-5-5"
    assert chosen.limits.max_rounds == 30 and chosen.limits.max_cost_usd == 0.5
    assert chosen.limits.max_tokens == 50_000, "a budget the settings leave off is the card's"
    assert chosen.options.effort == "medium"
    assert notes == [
        "the card asks for max_rounds = 99; your settings allow 30 rounds, so the run uses 30",
        "the card asks for effort max; your settings allow medium, so the run uses medium",
    ]


def test_without_a_settings_effort_the_models_default_is_the_cap() -> None:
    card, _ = card_with("effort: xhigh\n")
    chosen, notes = card_settings(Settings(), card)
    assert chosen.options.effort == "high" and "allow high" in notes[0]  # Sonnet 5.5's default
    low, _ = card_with("effort: low\n")
    assert card_settings(Settings(), low)[0].options.effort == "low"


def test_an_unknown_model_keeps_the_settings_model_and_check_names_it() -> None:
    card, _ = card_with("model: claude-nonesuch\n")
    chosen, notes = card_settings(Settings(), card)
    assert chosen.model == Settings().model and "claude-nonesuch" in notes[0]
    problems = choice_problems(Settings(), card.choices)
    assert problems[0][0] == "model" and "not in the model table" in problems[0][1]


def test_wrong_shapes_are_errors_on_their_lines() -> None:
    _, errors = card_with("effort: turbo\nmax_rounds: lots\nmax_cost_usd: -1\ndepends_on: {a: 1}\n")
    assert len(errors) == 4
    assert any("unknown effort 'turbo'" in e for e in errors)
    assert any("'max_rounds' should be a whole number" in e for e in errors)
    assert any("'max_cost_usd' should be USD above 0" in e for e in errors)
    assert any("'depends_on' should be a card path or title" in e for e in errors)


@pytest.mark.parametrize(
    "front",
    [
        "model: claude-opus-5-5\neffort: max\nmax_rounds: 99\nmax_cost_usd: 0.5\nmax_tokens: 50000\n",
        "effort: low\nmax_rounds: 5\n",
        "model: claude-nonesuch\nmax_cost_usd: 9\n",
        "",
    ],
)
def test_the_idle_servers_view_chooses_as_the_settings_do(front: str) -> None:
    """The forecast's `card_view` and a run's `card_settings` are one rule (`choose`)."""
    card, _ = card_with(front)
    assert card is not None
    for base in (settings(), Settings()):
        chosen, _ = card_settings(base, card)
        view = card_view(SettingsView.from_dump(base.dump()), card)
        assert view == SettingsView.from_dump(chosen.dump())
