"""What a resume adds: the one value both the scheduler and the resume itself need."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResumeGrant:
    """Extra budget for a resumed run (rounds and USD on top of what the run had)."""

    rounds: int = 0
    cost_usd: float = 0.0
