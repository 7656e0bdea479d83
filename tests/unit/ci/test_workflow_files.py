"""The GitHub workflow and the reusable action: linted, and in step with what `plan` prints.

actionlint (with shellcheck) checks the workflow and, through it, the action's inputs; the
action's own shell steps are not linted by actionlint, so they go through shellcheck here. The
workflow reads matrix fields by name; they must be fields a planned card has.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from cardrunner.board.plan import Budget, Plan, PlannedCard

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / ".github" / "workflows" / "cards.yml"
TEMPLATE = ROOT / "docs" / "workflows" / "cardrunner-issues.yml"
"""The workflow users copy: issues → cards → CI runs, and a review's continuation."""
BIN = Path(sys.executable).parent


def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def shellcheck(script: str) -> subprocess.CompletedProcess[str]:
    """shellcheck, as bash, on `script`."""
    return subprocess.run(
        [str(BIN / "shellcheck"), "--shell=bash", "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_actionlint_passes_on_the_workflow() -> None:
    proc = subprocess.run(
        [
            str(BIN / "actionlint"),
            "-no-color",
            "-shellcheck",
            str(BIN / "shellcheck"),
            str(WORKFLOW),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def actionlint(path: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "actionlint"), "-no-color", "-shellcheck", str(BIN / "shellcheck"), str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_actionlint_passes_on_the_issues_template() -> None:
    proc = actionlint(TEMPLATE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_checks_the_template_for_real(tmp_path: Path) -> None:
    """A shell mistake in the template's steps is caught (shellcheck through actionlint)."""
    bad = tmp_path / "bad.yml"
    bad.write_text(TEMPLATE.read_text().replace('--number "$NUMBER"', "--number $NUMBER"))
    proc = actionlint(bad)
    assert proc.returncode == 1 and "SC2086" in proc.stdout, proc.stdout


def test_a_review_continues_only_on_a_label_or_a_command_from_a_writer() -> None:
    """No comment starts a run unless it is the command, and then only a writer's; the
    continuation job depends on that gate."""
    workflow = load(TEMPLATE)
    jobs = workflow["jobs"]
    gate = jobs["review-request"]
    assert "github.event.label.name == 'cardrunner-continue'" in gate["if"]
    assert "startsWith(github.event.comment.body, '/cardrunner continue')" in gate["if"]
    check = gate["steps"][0]["run"]
    assert "collaborators/$ACTOR/permission" in check and "admin|maintain|write) ;;" in check
    runs = {name: str(job) for name, job in jobs.items() if "--review-file" in str(job)}
    assert list(runs) == ["continue-run"]
    assert jobs["continue-run"]["needs"] == "review-request"
    assert "comment" not in str(jobs["continue-run"]["steps"])  # no comment text reaches it


def test_the_matrix_fields_the_workflow_reads_are_fields_of_a_planned_card() -> None:
    used = set(re.findall(r"matrix\.([a-z_]+(?:\.[a-z_]+)?)", WORKFLOW.read_text()))
    assert {"card", "slug", "branch", "budget.max_cost_usd"} <= used
    for field in used:
        head, _, tail = field.partition(".")
        assert head in PlannedCard.model_fields, field
        if tail:
            assert head == "budget" and tail in Budget.model_fields, field


def test_one_card_failing_does_not_stop_the_others() -> None:
    job = load(WORKFLOW)["jobs"]["card"]
    assert job["strategy"]["fail-fast"] is False
    assert "max-parallel" in job["strategy"]


GITLAB = ROOT / ".gitlab" / "cards.gitlab-ci.yml"
GITLAB_RUN = ROOT / ".gitlab" / "cards-run.gitlab-ci.yml"


def heredoc(script: str) -> str:
    """The Python a GitLab script item feeds to `python - <<'PY'`."""
    return script.split("<<'PY'\n", 1)[1].rsplit("\nPY", 1)[0]


def test_the_gitlab_plan_job_turns_the_plan_into_one_child_job_per_card(tmp_path: Path) -> None:
    plan = Plan(
        include=[
            PlannedCard(
                card="cards/a.md",
                slug="a",
                branch="cards/a",
                title="A",
                budget=Budget(max_rounds=9, max_tokens=100, max_cost_usd=1.5),
            ),
            PlannedCard(
                card="cards/b.md",
                slug="b",
                branch="cards/b",
                title="B",
                budget=Budget(max_rounds=9, max_tokens=100, max_cost_usd=None),
            ),
        ],
        conflicts=[],
        skipped=[],
        budget_usd=None,
        scheduled_usd=None,
    )
    script = next(s for s in load(GITLAB)["cards-plan"]["script"] if "<<'PY'" in s)

    def child_pipeline(plan: Plan) -> Any:
        """The child pipeline the plan job's Python writes for `plan`."""
        (tmp_path / "plan.json").write_text(plan.model_dump_json())
        subprocess.run(
            [sys.executable, "-c", heredoc(script), "plan.json", "child.yml"],
            cwd=tmp_path,
            check=True,
            timeout=60,
        )
        return yaml.safe_load((tmp_path / "child.yml").read_text())

    child = child_pipeline(plan)
    assert child["include"] == [{"local": ".gitlab/cards-run.gitlab-ci.yml"}]
    assert child["card a"] == {
        "extends": ".cards-run",
        "variables": {
            "CARD": "cards/a.md",
            "CARD_SLUG": "a",
            "CARD_BRANCH": "cards/a",
            "CARD_TITLE": "A",
            "CARD_MAX_COST": "1.5",
        },
    }
    assert child["card b"]["variables"]["CARD_MAX_COST"] == ""
    assert ".cards-run" in load(GITLAB_RUN)
    empty = plan.model_copy(update={"include": []})
    assert list(child_pipeline(empty)) == ["include", "no cards"]


def test_the_gitlab_scripts_pass_shellcheck_and_compile() -> None:
    items = [*load(GITLAB)["cards-plan"]["script"], *load(GITLAB_RUN)[".cards-run"]["script"]]
    for item in items:
        if "<<'PY'" in item:
            compile(heredoc(item), "<gitlab script>", "exec")
            item = item.split("<<'PY'\n", 1)[0] + "<<'PY'\nPY\n"
        proc = shellcheck(item)
        assert proc.returncode == 0, f"{item}\n{proc.stdout}"
