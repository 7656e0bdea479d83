"""The model table: limits, thinking and prices as data, overridable in the settings."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import get_type_hints

from cardrunner.config.loading import load_settings
from cardrunner.config.model_table import MODELS, ModelSpec, Price
from cardrunner.config.settings import ModelOverride


def test_sonnet_5_5_defaults_are_fitted_from_the_table(tmp_path: Path) -> None:
    settings, _ = load_settings(tmp_path)
    options = settings.effective_options()
    assert (options.max_output_tokens, options.context_window, options.effort) == (
        128_000,
        1_000_000,
        "high",
    )
    spec = settings.model_spec()
    assert spec.as_of is not None and spec.price is not None
    assert settings.price() == Price(input=2, output=10, cache_read=0.10, cache_write=2.50)
    assert settings.effective_options("claude-opus-5-5").effort == "medium"


def test_models_and_prices_are_overridden_in_the_settings(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        'model = "house-model"\n[models.house-model]\ncontext_window = 64000\n'
        "max_output_tokens = 8000\n"
        "[prices.house-model]\ninput = 1\noutput = 2\ncache_read = 0.1\ncache_write = 1.25\n"
        '[models.claude-sonnet-5-5]\ndefault_effort = "low"\n'
    )
    settings, problems = load_settings(tmp_path)
    assert not problems, problems
    options = settings.effective_options()
    assert (options.max_output_tokens, options.context_window) == (8000, 64_000)
    assert settings.price() == Price(input=1, output=2, cache_read=0.1, cache_write=1.25)
    sonnet = settings.model_spec("claude-sonnet-5-5")
    assert sonnet.default_effort == "low" and sonnet.max_output_tokens == 128_000, "the rest stays"


def test_an_unknown_model_has_no_price_and_a_cost_limit_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text('model = "house-model"\n[limits]\nmax_cost_usd = 2\n')
    settings, _ = load_settings(tmp_path)
    assert settings.price() is None
    [refusal] = settings.refusals()
    assert "[prices.house-model]" in refusal and "$2.00" in refusal


def test_thinking_settings_are_checked_against_the_model(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text('[options]\nthinking = "disabled"\n')
    settings, _ = load_settings(tmp_path)
    [refusal] = settings.refusals()
    assert "refused by claude-sonnet-5-5" in refusal and "between_tools" in refusal
    assert settings.refusals("claude-sonnet-5") == [], "older models still take disabled"
    (tmp_path / "cardrunner.toml").write_text(
        '[options]\nthinking = "between_tools"\neffort = "max"\n'
    )
    settings, _ = load_settings(tmp_path)
    assert "low, medium or high" in settings.refusals()[0]
    assert "not offered by claude-opus-5-5" in settings.refusals("claude-opus-5-5")[0]


def test_the_override_mirrors_the_table_entry() -> None:
    """`[models.NAME]` has exactly the `ModelSpec` fields, each with its type and default."""
    spec = {f.name: f for f in fields(ModelSpec)}
    hints = get_type_hints(ModelSpec, include_extras=True)
    assert list(ModelOverride.model_fields) == list(spec)
    for name, field in ModelOverride.model_fields.items():
        assert field.default == spec[name].default, name
        assert field.rebuild_annotation() == hints[name], name
    assert ModelOverride().changes() == {}


def test_a_model_override_replaces_only_what_it_sets(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        '[models.claude-haiku-4-5]\ndefault_effort = "low"\n'
        "[models.claude-sonnet-5-5]\nprice = {input = 1, output = 2, cache_read = 0, cache_write = 0}\n"
    )
    settings, problems = load_settings(tmp_path)
    assert not problems
    haiku = settings.model_spec("claude-haiku-4-5")
    assert (haiku.default_effort, haiku.context_window) == ("low", 200_000)
    assert haiku.price == MODELS["claude-haiku-4-5"].price
    sonnet = settings.model_spec("claude-sonnet-5-5")
    assert sonnet.price == Price(input=1.0, output=2.0, cache_read=0.0, cache_write=0.0)
    assert sonnet.as_of == MODELS["claude-sonnet-5-5"].as_of


def test_a_price_is_validated_as_a_setting(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        "[prices.mine]\ninput = 1\noutput = 2\ncache_read = 0\ncache_write = 0\nextra = 1\n"
        "[models.mine]\ncontext_window = 0\n"
    )
    settings, problems = load_settings(tmp_path)
    assert {p.key for p in problems} == {"prices.mine.extra", "models.mine.context_window"}
    assert "Extra inputs are not permitted" in str(problems[0]), "as a model's is worded"
    assert settings.prices["mine"] == Price(input=1, output=2, cache_read=0, cache_write=0)
    assert settings.model_spec("mine").context_window == 1_000_000  # the default, not 0
