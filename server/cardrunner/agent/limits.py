"""Budgets and guards: what stops a run that would not stop by itself.

One object, checked before every model call (rounds, tokens, cost, wall time) and after every
round's tool calls (rounds in which every call failed, stalls). "0 or None means off". Each limit ends the run with its own
reason from the fixed list, and the detail says the numbers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field

from cardrunner.agent.events import Usage
from cardrunner.card.record import FailureReason
from cardrunner.config.model_table import Price
from cardrunner.config.settings import Limits

STALL_REPEATS = 3
WRAP_UP_SHARE = 0.8


@dataclass(frozen=True)
class CallRecord:
    """One finished call as the guards judge it."""

    name: str
    arguments: object
    result: str
    is_error: bool

    @property
    def key(self) -> str:
        return self.name + json.dumps(self.arguments, sort_keys=True, default=str)


@dataclass
class Stop:
    """Why a run must end now."""

    reason: FailureReason
    detail: str


def cost_of(usage: Usage, price: Price | None) -> float:
    """USD for `usage` at `price` (per million tokens); 0 when the model has no price."""
    if price is None:
        return 0.0
    prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    price = price.for_prompt(prompt)
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    ) / 1_000_000


def cost_basis(usage: Usage, price: Price | None, *, replayed: bool = False) -> str | None:
    """How a cost was made when it is not a measurement at a real price (the card's record
    says it): `estimate` (a replayed run, which nobody was billed, or the endpoint's usage was
    missing or implausible) or `priced 0`."""
    if usage.estimated or replayed:
        return "estimate"
    if price is not None and not (price.input or price.output):
        return "priced 0"
    return None


@dataclass(frozen=True)
class Spent:
    """What a run used before it was resumed; a new run has used nothing."""

    rounds: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    tool_calls: int = 0
    elapsed: float = 0.0
    """Wall seconds."""


@dataclass
class Guards:
    """Counts one run's consumption and decides when it must stop."""

    limits: Limits
    price: Price | None
    spent: InitVar[Spent] = Spent()
    clock: Callable[[], float] = time.monotonic
    rounds: int = field(default=0, init=False)
    usage: Usage = field(default_factory=Usage, init=False)
    cost_usd: float = field(default=0.0, init=False)
    tool_calls: int = field(default=0, init=False)
    consecutive_errors: int = field(default=0, init=False)
    wall_offset: float = field(default=0.0, init=False)
    _started: float = field(default=0.0, init=False)
    _recent_calls: list[str] = field(default_factory=list, init=False)
    _recent_errors: list[str] = field(default_factory=list, init=False)
    _wrap_up_sent: bool = field(default=False, init=False)

    def __post_init__(self, spent: Spent) -> None:
        self.rounds, self.usage, self.cost_usd = spent.rounds, spent.usage, spent.cost_usd
        self.tool_calls, self.wall_offset = spent.tool_calls, spent.elapsed
        self._started = self.clock()

    @property
    def elapsed(self) -> float:
        return self.wall_offset + self.clock() - self._started

    def time_left(self) -> float | None:
        """Seconds left of the wall budget (None: it is off)."""
        wall = self.limits.max_wall_seconds
        return max(0.0, wall - self.elapsed) if wall else None

    def check_before_request(self) -> Stop | None:
        """Called before every model call: is any budget spent?"""
        lim = self.limits
        if lim.max_rounds and self.rounds >= lim.max_rounds:
            return Stop("max_rounds", f"used all {lim.max_rounds} rounds")
        if lim.max_tokens and self.usage.total >= lim.max_tokens:
            return Stop("max_tokens", f"used {self.usage.total:,} of {lim.max_tokens:,} tokens")
        if lim.max_cost_usd and self.cost_usd >= lim.max_cost_usd:
            return Stop("max_cost", f"spent ${self.cost_usd:.2f} of ${lim.max_cost_usd:.2f}")
        if lim.max_wall_seconds and self.elapsed >= lim.max_wall_seconds:
            return Stop("max_wall", f"ran {self.elapsed:.0f} s of {lim.max_wall_seconds:.0f} s")
        return None

    def add_round(self, usage: Usage) -> float:
        """Count one model response; returns its cost."""
        self.rounds += 1
        self.usage = self.usage + usage
        cost = cost_of(usage, self.price)
        self.cost_usd += cost
        return cost

    def after_round(self, calls: list[CallRecord]) -> Stop | None:
        """Called once a round's calls have all run and their results are in the conversation:
        stalled, or too many failed rounds in a row?

        Counted by rounds, not calls (the seed's rule): three parallel calls that fail together
        are one failed round, so the model always gets to see a round's errors and answer them
        before its errors can end the run."""
        self.tool_calls += len(calls)
        if not calls:
            return None
        same = json.dumps(sorted(c.key for c in calls))
        self._recent_calls = [*self._recent_calls[-(STALL_REPEATS - 1) :], same]
        if len(self._recent_calls) == STALL_REPEATS and len(set(self._recent_calls)) == 1:
            what = ", ".join(sorted({c.name for c in calls}))
            return Stop(
                "stalled",
                f"{what} was called {STALL_REPEATS} rounds in a row with the same arguments",
            )
        if not all(c.is_error for c in calls):
            self.consecutive_errors = 0
            self._recent_errors = []
            return None
        self.consecutive_errors += 1
        errors = json.dumps(sorted(c.result for c in calls))
        self._recent_errors = [*self._recent_errors[-(STALL_REPEATS - 1) :], errors]
        last = calls[-1].result[:200]
        if len(self._recent_errors) == STALL_REPEATS and len(set(self._recent_errors)) == 1:
            return Stop("stalled", f"the same error {STALL_REPEATS} rounds in a row: {last}")
        limit = self.limits.max_consecutive_tool_errors
        if limit and self.consecutive_errors >= limit:
            return Stop(
                "tool_errors",
                f"every call failed in {self.consecutive_errors} rounds in a row; last: {last}",
            )
        return None

    def shares_used(self) -> dict[str, float]:
        """The share of each active budget used so far (0..1+)."""
        lim = self.limits
        shares: dict[str, float] = {}
        if lim.max_rounds:
            shares["rounds"] = self.rounds / lim.max_rounds
        if lim.max_tokens:
            shares["tokens"] = self.usage.total / lim.max_tokens
        if lim.max_cost_usd:
            shares["cost"] = self.cost_usd / lim.max_cost_usd
        if lim.max_wall_seconds:
            shares["time"] = self.elapsed / lim.max_wall_seconds
        return shares

    def wrap_up_notice(self) -> str | None:
        """Once, when 80 % of any budget is used: one line for the model saying what is left."""
        if self._wrap_up_sent:
            return None
        shares = self.shares_used()
        if not shares or max(shares.values()) < WRAP_UP_SHARE:
            return None
        self._wrap_up_sent = True
        return (
            f"[cardrunner: over 80% of the budget is used; left: {self.left()}. "
            "Finish now: verify, commit, and end with the RESULT line.]"
        )

    def left(self) -> str:
        """What remains of each active budget, in words (for the model)."""
        lim, parts = self.limits, []
        if lim.max_rounds:
            parts.append(f"{max(0, lim.max_rounds - self.rounds)} rounds")
        if lim.max_tokens:
            parts.append(f"{max(0, lim.max_tokens - self.usage.total):,} tokens")
        if lim.max_cost_usd:
            parts.append(f"${max(0.0, lim.max_cost_usd - self.cost_usd):.2f}")
        if lim.max_wall_seconds:
            parts.append(f"{max(0.0, lim.max_wall_seconds - self.elapsed):.0f} s")
        return ", ".join(parts) or "unlimited"
