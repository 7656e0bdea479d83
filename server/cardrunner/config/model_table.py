"""What cardrunner knows about each model: limits, thinking, default effort and prices, as data.

Prices and limits move, so they are a table with the date they were read from the model pages
(`as_of`), and `[models.NAME]` / `[prices.NAME]` in the settings override any entry or add a
model the table does not know. The table decides what a request may carry (the 5.5 models refuse
`thinking: disabled`; `between_tools` only runs at low, medium or high effort), the default
output limit (the model's maximum, so a long file does not end a run `truncated`) and whether
mid-conversation system messages exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Gt

Effort = Literal["low", "medium", "high", "xhigh", "max"]
ThinkingKind = Literal["adaptive", "adaptive_always", "budget", "none"]
"""`adaptive`: adaptive by default, `between_tools` is the lowest setting (Sonnet 5.5);
`adaptive_always`: always thinks adaptively (Opus 5.5, Fable); `budget`: older models that take
`disabled` (and budgets, which cardrunner never sends); `none`: no `thinking` field is sent at
all (an endpoint that refuses it, or returns thinking without signatures it can check again —
models/endpoint.py)."""

PRESERVED_THINKING = frozenset(
    {
        "claude-sonnet-5-5",
        "claude-opus-5-5",
        "claude-haiku-5-5",
        "claude-fable-5-1",
        "claude-fable-5-2",
        "claude-mythos-5-1",
        "claude-mythos-5-2",
    }
)
"""Models whose thinking blocks are bound to their prefix (and that take system messages)."""


@dataclass(frozen=True, kw_only=True)
class Price:
    """USD per million tokens. A plain dataclass that pydantic validates where the settings
    hold one (`[prices.NAME]`, with its config below), so the table reads without pydantic."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    input: float
    output: float
    cache_read: float
    cache_write: float
    above_tokens: int | None = None
    """A long-prompt tier: a response whose prompt (input, cache reads and writes) is over this
    many tokens is priced whole at `above` (Haiku 5.5 over 100,000)."""
    above: Price | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Price:
        """A price from its plain dump (the idle server's settings view), its tier included."""
        above = data.get("above")
        return cls(**{**data, "above": cls.of(above) if above is not None else None})

    def for_prompt(self, tokens: int) -> Price:
        """The price a response with a prompt of `tokens` is billed at."""
        if self.above is not None and self.above_tokens is not None and tokens > self.above_tokens:
            return self.above
        return self


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One model's entry; every field may be overridden under `[models.NAME]` (the settings'
    `ModelOverride`, which mirrors these fields and knows which ones were set)."""

    context_window: Annotated[int, Gt(0)] = 1_000_000
    max_output_tokens: Annotated[int, Gt(0)] = 128_000
    thinking: ThinkingKind = "adaptive"
    default_effort: Effort | None = "high"
    price: Price | None = None
    as_of: date | None = None
    """When the figures were read from the model and pricing pages."""
    images: bool = True
    """Whether the model's endpoint takes image blocks; false leaves them out (said up front)."""

    def thinking_problem(self, name: str, thinking: str, effort: str | None) -> str | None:
        """Why this thinking setting would be refused by `name` (None: it is accepted)."""
        if self.thinking == "none":
            return None  # nothing is sent, so nothing can be refused
        if thinking == "disabled" and self.thinking != "budget":
            lowest = "between_tools" if self.thinking == "adaptive" else "adaptive (always on)"
            return (
                f"options.thinking = 'disabled' is refused by {name} (a 400); its lowest "
                f"setting is '{lowest}'"
            )
        if thinking == "between_tools" and self.thinking != "adaptive":
            return f"options.thinking = 'between_tools' is not offered by {name}"
        if thinking == "between_tools" and (effort or self.default_effort) in ("xhigh", "max"):
            return (
                f"options.thinking = 'between_tools' runs only at effort low, medium or high on "
                f"{name}; use 'adaptive' for effort {effort or self.default_effort!r}"
            )
        return None


_READ = date(2026, 11, 30)
MODELS: dict[str, ModelSpec] = {
    "claude-sonnet-5-5": ModelSpec(
        default_effort="high",
        # cache reads were cut from $0.20 to $0.10 per MTok on 2026-10-07 (migration guide)
        price=Price(input=2.0, output=10.0, cache_read=0.10, cache_write=2.50),
        as_of=_READ,
    ),
    "claude-opus-5-5": ModelSpec(
        thinking="adaptive_always",
        default_effort="medium",
        price=Price(input=4.0, output=20.0, cache_read=0.20, cache_write=5.0),
        as_of=_READ,
    ),
    "claude-fable-5-1": ModelSpec(
        thinking="adaptive_always",
        default_effort="high",
        price=Price(input=10.0, output=50.0, cache_read=1.0, cache_write=12.5),
        as_of=_READ,
    ),
    "claude-sonnet-5": ModelSpec(
        thinking="budget",
        default_effort="high",
        price=Price(input=2.0, output=10.0, cache_read=0.20, cache_write=2.50),
        as_of=_READ,
    ),
    "claude-haiku-5-5": ModelSpec(
        default_effort="medium",
        price=Price(
            input=0.10,
            output=0.50,
            cache_read=0.01,
            cache_write=0.125,
            above_tokens=100_000,
            above=Price(input=0.50, output=2.50, cache_read=0.05, cache_write=0.625),
        ),
        as_of=_READ,
    ),
    "claude-haiku-4-5": ModelSpec(
        context_window=200_000,
        max_output_tokens=64_000,
        thinking="budget",
        default_effort=None,
        price=Price(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25),
        as_of=_READ,
    ),
}
UNKNOWN = ModelSpec(thinking="budget", default_effort=None)
"""A model the table does not know: nothing is assumed about its thinking or its price."""


PLATFORM_NAME = re.compile(
    r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic\.)?(.+?)(?:-v\d+:\d+|@\d+)?$"
)
"""Bedrock's and Vertex's names for a Claude model (`us.anthropic.claude-…-v1:0`,
`claude-…@20261101`) around the table's."""


def model_spec(name: str, override: Mapping[str, Any] | None = None) -> ModelSpec:
    """The table's entry for `name` (UNKNOWN if it has none; a Bedrock or Vertex name finds
    the model it names) with the fields `override` sets."""
    found = PLATFORM_NAME.match(name)
    base = MODELS.get(name) or MODELS.get(found.group(1) if found else name, UNKNOWN)
    return replace(base, **override) if override else base
