"""The cost forecast: past runs first (the card's, then the repository's), else the card's size."""

from __future__ import annotations

from pathlib import Path

from cardrunner.card.card import parse_card
from cardrunner.config.plainsettings import SettingsView
from cardrunner.config.settings import Settings
from cardrunner.record.forecast import (
    IMAGE_TOKENS,
    LONG_ROUNDS,
    SHORT_ROUNDS,
    forecast,
    rules_tokens,
    run_cost,
    start_tokens,
)

CARD = "---\ntitle: A card\n---\nFix it.\n\n## Acceptance criteria\n\n- It works.\n"


def settings(**limits: float) -> SettingsView:
    """What the language server holds of settings with these limits, validated by the model."""
    return SettingsView.from_dump(Settings.model_validate({"limits": limits}).dump())


def test_the_cards_own_runs_span_the_range_and_are_named() -> None:
    shown = forecast(settings(), 10_000, [0.12, 0.40, 0.25, 0.31], [9.0, 9.0])
    assert (shown.low_usd, shown.high_usd) == (0.12, 0.40)
    assert shown.title() == "≈ $0.12–$0.40 a run (from 4 past runs of this card)"
    one = forecast(settings(), 10_000, [0.30], [])
    assert (one.low_usd, one.high_usd) == (0.15, 0.60) and "from 1 past run of" in one.title()


def test_other_cards_runs_count_only_when_there_are_a_few() -> None:
    assert "from 3 past runs of other cards" in forecast(settings(), 1, [], [1, 2, 3]).basis
    assert "estimate from the card's size" in forecast(settings(), 10_000, [], [0.5]).basis


def test_without_runs_the_size_is_priced_by_the_model_table_over_a_short_and_a_long_run() -> None:
    s = settings()
    price = s.price()
    assert price is not None
    shown = forecast(s, 12_000, [], [])
    assert shown.low_usd == round(run_cost(price, 12_000, SHORT_ROUNDS), 4)
    assert shown.high_usd == round(run_cost(price, 12_000, LONG_ROUNDS), 4)
    assert shown.basis == "estimate from the card's size, ~12k tokens to start"
    bigger = forecast(s, 120_000, [], [])
    assert bigger.low_usd and shown.low_usd and bigger.low_usd > shown.low_usd
    dearer = forecast(SettingsView(model="claude-fable-5-1"), 12_000, [], [])
    assert dearer.high_usd and shown.high_usd and dearer.high_usd > shown.high_usd
    fewer = forecast(settings(max_rounds=8), 12_000, [], [])
    assert fewer.high_usd == round(run_cost(price, 12_000, 8), 4)


def test_the_high_end_is_the_cost_limit_the_run_stops_at() -> None:
    shown = forecast(settings(max_cost_usd=0.2), 10_000, [0.1, 0.9], [])
    assert shown.high_usd == 0.2 and shown.title().endswith("; the run stops at $0.20)")


def test_an_unpriced_model_says_it_cannot_tell() -> None:
    shown = forecast(SettingsView(model="my-local-model"), 10_000, [], [])
    assert shown.title() == "cost unknown (no price for my-local-model in the model table)"


def test_the_start_counts_the_rules_the_instructions_the_card_and_its_images() -> None:
    card, _ = parse_card(CARD, Path("cards/a.md"))
    assert card is not None
    rules = rules_tokens()
    plain = start_tokens(card, 0, rules)
    assert plain > rules and start_tokens(card, 4_000, rules) == plain + 1_000
    shot, _ = parse_card(CARD.replace("Fix it.", "Fix it.\n\n![a](a.png) ![b](b.png)"), card.path)
    assert shot is not None
    assert start_tokens(shot, 0, rules) - plain >= 2 * IMAGE_TOKENS
    linked, _ = parse_card(CARD.replace("Fix it.", "![x](https://x.example/a.png)"), card.path)
    assert linked is not None and start_tokens(linked, 0, rules) < plain + IMAGE_TOKENS
