"""The model table: limits, thinking and prices as data, overridable in the settings."""

from __future__ import annotations

from pathlib import Path

from cardrunner.config.loading import load_settings
from cardrunner.config.model_table import Price


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
