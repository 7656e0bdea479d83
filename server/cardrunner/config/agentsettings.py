"""`[agent]`: what the agent is told besides the card, as the user allows it.

Apart from `settings.py` so the settings model stays one screen per section; `Settings.agent`
is the only reader.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AgentSettings(BaseModel):
    """The project's instructions (AGENTS.md) in the system prompt, and their size cap."""

    model_config = ConfigDict(extra="forbid")

    project_instructions: bool = Field(
        True,
        description="Read AGENTS.md (CLAUDE.md when there is none) at the repository root and "
        "every AGENTS.md in the write area into the system prompt, after cardrunner's rules.",
    )
    instructions_max_bytes: int = Field(
        16_384, ge=0, description="The cap over all instruction files; the cut is said."
    )
