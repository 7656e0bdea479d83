"""Evidence that looked at the app: a wrong fix is not Done from the UI, nor by citing the source.

The demo's InvoiceApp with its real UI server (an MCP server that drives the running app), the
real runner, a real git repository and `--yes`. The wrong fix doubles the discount; the model
first quotes the right total from the UI (refused: the app shows another), then quotes the source
from `read_file` (refused: reading the code is not seeing the app), commits anyway and claims
done. The run must end Failed with no commit on the user's branch.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Event, RunFinished, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.config.loading import load_settings
from cardrunner.demo import create_workspace
from cardrunner.models.scripted import ScriptedModel
from cardrunner.processes.groups import ProcessGroups
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from tests.support.project import final, report, turn, use
from tests.support.trust import TRUSTED
from tests.support.uiserver import ui_servers, wait_gone

CARD = "cards/total-ignores-the-discount.md"
TOTAL = "    def total(self) -> Decimal:\n        return self.subtotal()\n\n"
DOUBLED = "    def total(self) -> Decimal:\n        return self.subtotal() - 2 * self.discount_amount()\n\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


async def play(root: Path, steps: list[dict[str, Any]]) -> list[Event]:
    settings, problems = load_settings(root)
    assert problems == []
    groups = ProcessGroups()
    options = RunOptions(
        root=root,
        card_path=root / CARD,
        settings=settings,
        model=ScriptedModel(steps),
        approver=AutoApprover(),
        processes=groups,
        env=TRUSTED,
    )
    events = [e async for e in run_card(options)]
    assert not groups.live() and not wait_gone(ui_servers())
    return events


def _look(*then: dict[str, Any]) -> list[dict[str, Any]]:
    """Start the app, enter 10 % and read the total (`toolu_total`); `then` in the same turn
    (a report citing a quote the result lacks is checked by the runner, not the script)."""
    return [
        turn(use("mcp__ui__ui_start")),
        turn(
            use("mcp__ui__ui_set_text", id="discount", text="10"),
            use("mcp__ui__ui_read", "toolu_total", id="total"),
            *then,
        ),
    ]


async def test_a_wrong_fix_is_not_done_from_the_ui_nor_from_the_source(tmp_path: Path) -> None:
    root = create_workspace(tmp_path / "repo")
    head = git(root, "rev-parse", "HEAD")
    steps = [
        turn(use("read_file", path="invoice/model.py")),
        turn(use("write_file", path="invoice/model.py", edit=[[TOTAL, DOUBLED]])),
        *_look(report(1, "the total is 81.00", ("toolu_total", "Total: 81.00"))),
        turn(
            use("read_file", "toolu_source", path="invoice/model.py"),
            report(
                1,
                "total() subtracts the discount",
                ("toolu_source", "return self.subtotal() - 2 * self.discount_amount()"),
            ),
        ),
        turn(use("mcp__ui__ui_stop")),
        turn(use("git_commit", message="card: The total ignores the discount\n\nSubtract it.")),
        final(),
        final(),
        final(),
    ]
    events = await play(root, steps)
    reports = [e for e in events if isinstance(e, ToolFinished) and e.name == "report_criterion"]
    assert [r.is_error for r in reports] == [True, True], [
        (type(e).__name__, str(getattr(e, "result", getattr(e, "detail", "")))[:200])
        for e in events
    ]
    assert "does not appear in the result" in reports[0].result
    assert "did not observe it" in reports[1].result and "read_file" in reports[1].result
    result = events[-1]
    assert isinstance(result, RunFinished)
    assert result.status == "failed" and result.reason == "unverified", result
    assert result.commit is None and result.kept_branch
    assert "2 * self.discount_amount()" in git(
        root, "show", f"{result.kept_branch}:invoice/model.py"
    )
    assert git(root, "rev-list", f"{head}..HEAD", "--", "invoice") == ""  # no commit of it
    assert "2 *" not in (root / "invoice" / "model.py").read_text()
    assert git(root, "status", "--porcelain", "--", "invoice") == ""
    assert "state: Failed" in (root / CARD).read_text()


async def test_the_right_fix_is_verified_in_the_app_and_says_so(tmp_path: Path) -> None:
    root = create_workspace(tmp_path / "repo")
    fixed = DOUBLED.replace("2 * ", "")
    steps = [
        turn(use("read_file", path="invoice/model.py")),
        turn(use("write_file", path="invoice/model.py", edit=[[TOTAL, fixed]])),
        *_look(),
        turn(
            use("mcp__ui__ui_read", "toolu_discount", id="discount_amount"),
            report(1, "81.00", ("toolu_total", "Total: 81.00"), ("toolu_discount", "9.00")),
            report(2, "by the model", ("toolu_total", "Total: 81.00"), passed=False),
        ),
        turn(use("mcp__ui__ui_stop")),
        final("Criterion 1 not checked.\nRESULT: failed: only the first criterion was checked"),
    ]
    events = await play(root, steps)
    result = events[-1]
    assert isinstance(result, RunFinished) and result.status == "failed"
    first = result.ledger[0]
    assert first.status == "verified" and first.level == "app"
    assert first.line().startswith("verified in the app")
