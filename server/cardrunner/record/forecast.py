"""What a run of a card is likely to cost, before the click: a range, and what it rests on.

The best guide is what runs cost here before: the card's own past runs, read from the
`Cost-USD:` trailers of its card commits (git is the history, `git/branches.py`), else the
repository's runs of other cards. Without any, the range is an estimate from the card's size:
the first request's tokens (cardrunner's rules, the tool definitions, the project's
instructions, the card's text and its images), grown by a typical amount each round, over a
short and a long run, priced by the model table for the model the card will run with. The
basis is always said, so nobody mistakes a guess for a record, and the high end never exceeds
the cost limit the run would stop at.

Past runs are history anyone who can push a commit writes: a `Cost-USD: 0.0001` trailer is one
line of a commit message. So a recorded cost counts only when it can be checked (`checked_costs`):
a finite, non-negative number that agrees with the run log it names when that log is here (the
log's `result` line is what the run itself counted), and otherwise with the run's `Tokens:`,
which must be at least what every request carries and priced at no less than the table's
cheapest rate. What was left out is said in the basis, next to what the range rests on.

The estimate's figures are round numbers, not a fit: a short run of 6 rounds and a long one of
25, each round adding 1,500 tokens to the conversation and writing 800 (thinking included);
an image is counted at 1,600 tokens, what the API charges for one at its largest size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from cardrunner.card.card import Card
from cardrunner.card.images import image_count
from cardrunner.card.record import RunRecord
from cardrunner.config.model_table import MODELS, Price
from cardrunner.config.plainsettings import SettingsView

SHORT_ROUNDS, LONG_ROUNDS = 6, 25
GROWTH_TOKENS = 1_500
"""What one round adds to the conversation: tool results and the model's own turn."""
OUTPUT_TOKENS = 800
"""What the model writes in one round, thinking included."""
IMAGE_TOKENS = 1_600
TOOLS_TOKENS = 3_000
"""The tool definitions every request carries (the built-in tools; MCP servers add more)."""
MIN_REPOSITORY_RUNS = 2
"""Other cards' runs are a guide only when there are a few of them."""
LOG_TAIL_BYTES = 256_000
"""How much of a run log's end is read for its `result` line (the last line it writes)."""
COST_TOLERANCE_USD = 0.0001
"""A trailer's cost is the log's rounded to four places (`run/session.py`)."""


@dataclass(frozen=True)
class Checked:
    """The past runs' costs that could be checked, and how many records were left out."""

    costs: tuple[float, ...] = ()
    ignored: int = 0


def cheapest_rate() -> float:
    """The lowest USD per token the model table charges for anything (a cache read)."""
    rates = [
        rate
        for spec in MODELS.values()
        if spec.price is not None
        for rate in (spec.price.cache_read, spec.price.input, spec.price.cache_write)
        if rate > 0
    ]
    return min(rates, default=0.0) / 1e6


def checked_costs(records: Sequence[RunRecord], root: Path, floor_tokens: int) -> Checked:
    """The costs of `records` that can be trusted; the others are counted as ignored.

    A cost must be a finite, non-negative number. When the record names a run log that is
    here, the log's own total decides; without one, the record's tokens must be at least
    `floor_tokens` (what the first request alone carries) and the cost at least those tokens
    at the table's cheapest rate: a forged `Cost-USD: 0.0001` with no run behind it says
    nothing about what a run costs, and must not make the lens promise "<$0.01"."""
    rate = cheapest_rate()
    costs: list[float] = []
    ignored = 0
    for record in records:
        cost = record.cost_usd
        if cost is None:
            continue
        if _trusted(record, cost, root, floor_tokens, rate):
            costs.append(cost)
        else:
            ignored += 1
    return Checked(tuple(costs), ignored)


def _trusted(record: RunRecord, cost: float, root: Path, floor: int, rate: float) -> bool:
    if not math.isfinite(cost) or cost < 0:
        return False
    logged = log_cost(root, record.log) if record.log else None
    if logged is not None:
        return abs(round(logged, 4) - cost) <= COST_TOLERANCE_USD
    tokens = record.tokens
    return tokens is not None and tokens >= floor and cost >= tokens * rate - COST_TOLERANCE_USD


def log_cost(root: Path, name: str) -> float | None:
    """The cost the run log `name` (relative to `root`, as the `Log:` trailer has it) counted
    in its `result` line; None when there is no such log inside `root`, or no result in it.

    A name leading outside the repository (`..`, an absolute path, a symlink) is not read."""
    base = root.resolve()
    try:
        path = (base / name).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        with path.open("rb") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - LOG_TAIL_BYTES))
            tail = file.read(LOG_TAIL_BYTES)
    except (OSError, ValueError):
        return None
    for line in reversed(tail.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") == "result":
            data = record.get("data")
            value = data.get("cost_usd") if isinstance(data, dict) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value) if math.isfinite(value) and value >= 0 else None
            return None
    return None


@dataclass(frozen=True)
class Forecast:
    """A likely cost range of one run, and what it rests on."""

    low_usd: float | None
    high_usd: float | None
    basis: str
    """`from 4 past runs of this card`, `estimate from the card's size (~9k tokens to start)`."""

    def title(self) -> str:
        """The lens's and the board's line: `≈ $0.08–$0.31 a run (from 4 past runs …)`."""
        if self.low_usd is None or self.high_usd is None:
            return f"cost unknown ({self.basis})"
        low, high = _usd(self.low_usd), _usd(self.high_usd)
        shown = low if low == high else f"{low}–{high}"
        return f"≈ {shown} a run ({self.basis})"


def _usd(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 else "<$0.01"


def rules_tokens() -> int:
    """cardrunner's own rules (`agent/instructions.md`), as tokens."""
    rules = files("cardrunner.agent").joinpath("instructions.md").read_text(encoding="utf-8")
    return len(rules) // 4


def start_tokens(card: Card, instruction_bytes: int, rules: int) -> int:
    """The first request's tokens, estimated (4 characters a token): the rules, the tools, the
    project's instructions, the card's prompt and its images."""
    text = rules + TOOLS_TOKENS + instruction_bytes // 4 + len(card.prompt()) // 4
    return text + IMAGE_TOKENS * image_count(card.text)


def run_cost(price: Price, start: int, rounds: int) -> float:
    """A run of `rounds` rounds that starts at `start` tokens: each round reads the
    conversation so far from the cache, writes what it added and the model's turn."""
    read = rounds * start + GROWTH_TOKENS * rounds * (rounds - 1) / 2
    written = start + GROWTH_TOKENS * rounds
    out = OUTPUT_TOKENS * rounds
    return (price.cache_read * read + price.cache_write * written + price.output * out) / 1e6


def forecast(
    settings: SettingsView,
    start: int,
    card_costs: Sequence[float],
    repository_costs: Sequence[float],
    ignored: int = 0,
) -> Forecast:
    """The range for a card whose run has `settings` (the card's choices applied), starts at
    `start` tokens, and whose past runs cost `card_costs` (the repository's: `repository_costs`).
    `ignored`: past records left out as unverifiable (`checked_costs`), said in the basis."""
    card_costs = [c for c in card_costs if math.isfinite(c) and c >= 0]
    repository_costs = [c for c in repository_costs if math.isfinite(c) and c >= 0]
    limit = settings.limits.max_cost_usd or None
    if card_costs:
        low, high, basis = *_spread(card_costs), _runs(len(card_costs), "of this card")
    elif len(repository_costs) >= MIN_REPOSITORY_RUNS:
        low, high = _spread(repository_costs)
        basis = _runs(len(repository_costs), "of other cards")
    else:
        price = settings.price()
        if price is None:
            return Forecast(None, None, f"no price for {settings.model} in the model table")
        rounds = max(1, min(LONG_ROUNDS, settings.limits.max_rounds or LONG_ROUNDS))
        low = run_cost(price, start, min(SHORT_ROUNDS, rounds))
        high = run_cost(price, start, rounds)
        basis = f"estimate from the card's size, ~{_thousands(start)} tokens to start"
    if limit is not None and high > limit:
        low, high = min(low, limit), limit
        basis += f"; the run stops at ${limit:.2f}"
    if ignored:
        basis += f"; {ignored} unverifiable past cost{'s' * (ignored != 1)} ignored"
    return Forecast(round(low, 4), round(high, 4), basis)


def _spread(costs: Sequence[float]) -> tuple[float, float]:
    """The range past runs span; one run alone says little, so half to twice its cost."""
    if len(costs) == 1:
        return costs[0] / 2, costs[0] * 2
    return min(costs), max(costs)


def _runs(count: int, whose: str) -> str:
    return f"from {count} past run{'s' * (count != 1)} {whose}"


def _thousands(tokens: int) -> str:
    return f"{tokens / 1000:.0f}k" if tokens >= 1000 else str(tokens)
