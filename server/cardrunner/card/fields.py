"""The front-matter fields a card chooses for its own run: model, effort, budgets, its package,
dependencies.

A mechanical card can ask for a cheaper model or fewer rounds; a card that builds on another
says so with `depends_on:`. Here they are only read and checked for shape: whether a model is
known is the model table's business (`cardrunner check`), and whether the user's settings allow
what the card asks is the run's (`run/choices.py`, which clamps and says so). A value of the
wrong shape is an error, not a silent default: a card asking for `max_rounds: lots` must not run
with sixty.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""The effort levels in rising order (a card may ask for less than the settings, never more)."""

CHOICE_KEYS = ("model", "effort", "max_rounds", "max_cost_usd", "max_tokens", "package")

Problem = Callable[[int, str, Literal["error", "warning"]], None]
Where = Callable[[str], int]


@dataclass(frozen=True)
class CardChoices:
    """What the card asks for its run; None: what the settings say."""

    model: str | None = None
    effort: str | None = None
    max_rounds: int | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    package: str | None = None
    """The monorepo package the card belongs to (`[packages.NAME]`, config/packages.py)."""
    lines: dict[str, int] = field(default_factory=dict, compare=False)
    """The 0-based line each given key is on (for `cardrunner check`)."""

    def asked(self) -> dict[str, Any]:
        """The keys the card sets, with their values."""
        return {k: getattr(self, k) for k in CHOICE_KEYS if getattr(self, k) is not None}

    def describe(self) -> str:
        """`model claude-haiku-5-5 · effort low · ≤ 10 rounds · ≤ $0.50` (empty: none asked);
        the package is said apart, with its folder (config/packages.py)."""
        parts = [f"model {self.model}"] if self.model else []
        parts += [f"effort {self.effort}"] if self.effort else []
        parts += [f"≤ {self.max_rounds} rounds"] if self.max_rounds is not None else []
        parts += [f"≤ ${self.max_cost_usd:.2f}"] if self.max_cost_usd is not None else []
        parts += [f"≤ {self.max_tokens:,} tokens"] if self.max_tokens is not None else []
        return " · ".join(parts)


def read_fields(data: dict[Any, Any], where: Where, problem: Problem) -> dict[str, Any]:
    """`choices` and `depends_on` for `Card`, every wrong value reported on its line."""
    values: dict[str, Any] = {}
    lines = {k: where(k) for k in CHOICE_KEYS if k in data}
    for key in ("model", "effort", "package"):
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value.strip():
                problem(where(key), f"'{key}' should be a name, e.g. {_EXAMPLE[key]}", "error")
            elif key == "effort" and value.strip() not in EFFORTS:
                problem(
                    where(key), f"unknown effort {value!r} (one of {', '.join(EFFORTS)})", "error"
                )
            else:
                values[key] = value.strip()
    for key in ("max_rounds", "max_tokens"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problem(where(key), f"'{key}' should be a whole number of at least 1", "error")
            else:
                values[key] = value
    if "max_cost_usd" in data:
        value = data["max_cost_usd"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            problem(
                where("max_cost_usd"), "'max_cost_usd' should be USD above 0, e.g. 0.5", "error"
            )
        else:
            values["max_cost_usd"] = float(value)
    return {
        "choices": CardChoices(**values, lines=lines),
        "depends_on": _depends_on(data, where, problem),
    }


_EXAMPLE = {"model": "claude-haiku-5-5", "effort": "low", "package": "web"}


def _depends_on(data: dict[Any, Any], where: Where, problem: Problem) -> list[str]:
    """Card paths or titles: one as text, or a list of them."""
    if "depends_on" not in data or data["depends_on"] is None:
        return []
    value = data["depends_on"]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
        message = "'depends_on' should be a card path or title, or a list of them"
        problem(where("depends_on"), message, "error")
        return []
    return list(dict.fromkeys(i.strip() for i in items))
