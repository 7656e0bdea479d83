"""Prices from the model table: Haiku 5.5's long-prompt tier is billed on the whole response."""

from __future__ import annotations

import pytest

from cardrunner.agent.events import Usage
from cardrunner.agent.limits import cost_of
from cardrunner.config.model_table import MODELS, Price, model_spec
from cardrunner.config.plainsettings import SettingsView
from cardrunner.config.settings import Settings


def test_haiku_5_5_is_known_with_its_window_and_output_limit() -> None:
    spec = model_spec("claude-haiku-5-5")
    assert spec is MODELS["claude-haiku-5-5"]
    assert (spec.context_window, spec.max_output_tokens) == (1_000_000, 128_000)
    assert spec.thinking == "adaptive" and spec.default_effort == "medium"


@pytest.mark.parametrize(
    ("usage", "usd"),
    [
        # 100,000 prompt tokens is still the first tier: $0.10 in, $0.50 out per million
        (Usage(input_tokens=100_000, output_tokens=10_000), 0.010 + 0.005),
        # one more token and the whole response is priced at $0.50 / $2.50
        (Usage(input_tokens=100_001, output_tokens=10_000), (100_001 * 0.50 + 10_000 * 2.50) / 1e6),
        # cache reads and writes count toward the prompt and take the tier's rates
        (
            Usage(input_tokens=1_000, cache_read_input_tokens=120_000, output_tokens=1_000),
            (1_000 * 0.50 + 120_000 * 0.05 + 1_000 * 2.50) / 1e6,
        ),
    ],
)
def test_the_long_prompt_tier_prices_the_whole_response(usage: Usage, usd: float) -> None:
    assert cost_of(usage, MODELS["claude-haiku-5-5"].price) == pytest.approx(usd)


def test_a_flat_price_has_no_tier() -> None:
    flat = MODELS["claude-sonnet-5-5"].price
    assert flat is not None and flat.for_prompt(10_000_000) is flat


def test_the_idle_servers_view_keeps_the_tier() -> None:
    """The plain view rebuilds prices from the settings' dump, nested tier included."""
    view = SettingsView.from_dump(Settings().dump())
    price = view.model_spec("claude-haiku-5-5").price
    assert isinstance(price, Price) and isinstance(price.above, Price)
    assert price.for_prompt(200_000).input == 0.50
