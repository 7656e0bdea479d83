"""Why a run fails, and after which reasons it may be resumed: the fixed list (DESIGN.md).

Apart from the events (events.py) that carry them, so the editor's lenses can tell a resumable
card without loading the events' pydantic models in an idle language server.
"""

from __future__ import annotations

from typing import Literal

FailureReason = Literal[
    "model_failed",
    "max_rounds",
    "max_tokens",
    "max_cost",
    "max_wall",
    "tool_errors",
    "stalled",
    "unverified",
    "tests_failed",
    "rejected",
    "cancelled",
    "api_error",
    "truncated",
    "refusal",
    "no_result_line",
    "config_error",
    "interrupted",
]
"""The fixed list of reasons a run can fail for (DESIGN.md); stored on the card."""

RESUMABLE_REASONS: frozenset[str] = frozenset(
    {"max_rounds", "max_tokens", "max_cost", "max_wall", "interrupted", "cancelled", "api_error"}
)
"""Reasons after which continuing the same conversation makes sense."""
