"""An answer cut off by the output limit or the context window: go on, bounded, with a note.

`max_tokens` in the middle of a tool call used to end the run `truncated`, which cannot be
resumed. The turn stays in the conversation as received (append-only); each of its calls is
answered "not run" (its arguments may be cut), the model is told what happened, and the next
request gets a larger output limit (doubled, up to the model's maximum). When the API says the
context window is exceeded, the next round compacts first. Two recoveries in a row at most; a
third cut-off ends the run with the reason it always had.
"""

from __future__ import annotations

from dataclasses import dataclass

from cardrunner.agent.model import Block

MAX_IN_A_ROW = 2


@dataclass
class Recovery:
    """The output limit of the next request, and how many cut-offs were recovered in a row."""

    limit: int
    ceiling: int
    in_a_row: int = 0

    def can_continue(self) -> bool:
        return self.in_a_row < MAX_IN_A_ROW

    def answered(self) -> None:
        """A round ended normally: the next cut-off may be recovered again."""
        self.in_a_row = 0

    def not_run(self, call: Block) -> str:
        """The result of a call that was cut off with the answer."""
        return (
            f"{call.get('name')} was not run: your answer was cut off before this call was "
            "complete, so its arguments may be incomplete."
        )

    def note(self, window: bool) -> str:
        """What the model is told; raises the output limit for the next request."""
        self.in_a_row += 1
        if window:
            return (
                "[cardrunner: the conversation outgrew the context window and your answer was "
                "cut off; older context is compacted now. Go on from where you stopped.]"
            )
        before, self.limit = self.limit, min(self.ceiling, self.limit * 2)
        raised = (
            f"raised from {before:,} to {self.limit:,} tokens"
            if self.limit > before
            else f"already the model's maximum, {self.limit:,} tokens"
        )
        return (
            f"[cardrunner: your answer was cut off at the output limit (now {raised}). Go on "
            "from where you stopped; for a large file, change it with edit_file instead of "
            "writing it whole.]"
        )
