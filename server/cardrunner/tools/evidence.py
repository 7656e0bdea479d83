"""`report_criterion`: the model states, per acceptance criterion, what it observed.

"A build that compiles proves nothing": a run may only end `done` when every criterion has
passing evidence (unless `require_evidence = false`). The evidence is shown on the card in the
editor and kept in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cardrunner.agent.events import CriterionReported
from cardrunner.agent.gate import ToolContext, ToolError, ToolResult
from cardrunner.tools.base import FunctionTool, schema


@dataclass
class Evidence:
    """What the model reported for each criterion (0-based index)."""

    criteria: list[str]
    reports: dict[int, tuple[bool, str]] = field(default_factory=dict)

    def missing(self) -> list[int]:
        """Criteria without passing evidence."""
        return [i for i in range(len(self.criteria)) if not self.reports.get(i, (False, ""))[0]]

    def tool(self) -> FunctionTool:
        return FunctionTool(
            name="report_criterion",
            description=(
                "Report the outcome of checking ONE acceptance criterion of the card in the running "
                "app. index is the criterion's 0-based number as listed in the card. evidence says "
                "what you did and what you observed (values read back, dialogs seen). Call it once "
                "per criterion after verifying live; RESULT: done requires passing evidence for all."
            ),
            input_schema=schema(
                {
                    "index": {"type": "integer", "minimum": 0},
                    "passed": {"type": "boolean"},
                    "evidence": {"type": "string", "minLength": 1},
                },
                required=["index", "passed", "evidence"],
            ),
            fn=self._report,
            timeout=5,
        )

    async def _report(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        index, passed, evidence = args["index"], args["passed"], args["evidence"].strip()
        if index >= len(self.criteria):
            raise ToolError(
                f"There is no criterion {index}; the card has {len(self.criteria)} "
                f"(indexes 0..{len(self.criteria) - 1})."
            )
        self.reports[index] = (passed, evidence)
        ctx.emit(CriterionReported(index=index, passed=passed, evidence=evidence))
        left = self.missing()
        rest = "all criteria have passing evidence" if not left else f"still unverified: {left}"
        return ToolResult(
            f"criterion {index} recorded as {'passed' if passed else 'failed'}; {rest}"
        )
