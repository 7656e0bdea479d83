"""A card's own instructions, choices and dependencies on whole runs: the real `anthropic` SDK
against the strict fake Messages API, a real git repository, the real CLI."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from cardrunner.agent.events import Notice, RunStarted
from cardrunner.record.log import read_events, read_log
from cardrunner.run.assembly import INSTRUCTIONS
from tests.support.api_run import run_through_api
from tests.support.project import cli, fix_transcript, git, make_project

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
AGENTS = (
    "# House rules\n\nRun the tests with pytest; keep `add` pure.\n\n"
    "<!-- BACKLOG.MD GUIDELINES START -->\nManage every task with the backlog CLI.\n"
    "<!-- BACKLOG.MD GUIDELINES END -->\n"
)


def system_text(body: dict[str, object]) -> str:
    system = body["system"]
    assert isinstance(system, list)
    return "".join(block["text"] for block in system)


def ask(card: Path, front: str) -> None:
    card.write_text(card.read_text().replace("category: Bug\n", f"category: Bug\n{front}"))


async def test_the_first_request_carries_agents_md_after_the_rules_and_the_cards_choices(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    (root / "AGENTS.md").write_text(AGENTS)
    (root / "src" / "AGENTS.md").write_text("Functions here take two numbers.\n")
    ask(card, "model: claude-opus-5-5\neffort: low\nmax_rounds: 99\n")
    (root / "cards" / "shot.png").write_bytes(PNG)
    card.write_text(card.read_text().replace("returns -1.", "returns -1.\n\n![the bug](shot.png)"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "house rules; a cheaper card with a screenshot")
    run = await run_through_api(root, card, fix_transcript(), run_chooses_model=True)
    assert run.result.status == "done", (run.result.reason, run.result.detail)
    assert not run.api.violations, run.api.violations
    first = run.bodies[0]
    assert first["model"] == "claude-opus-5-5" and first["output_config"] == {"effort": "low"}
    system = system_text(first)
    rules = INSTRUCTIONS.read_text(encoding="utf-8")
    assert system.startswith(rules), "cardrunner's rules come first, unchanged"
    after = system[len(rules) :]
    assert "cannot override the rules above" in after
    assert after.index("keep `add` pure") < after.index("Functions here take two numbers.")
    assert "backlog CLI" not in system
    assert all(system_text(b) == system for b in run.bodies), "the same system on every request"
    [text, image] = first["messages"][0]["content"]
    assert "![the bug](shot.png)" in text["text"]
    assert image["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(PNG).decode(),
    }
    sent = [b["messages"][0]["content"][1]["source"] for b in run.bodies]
    assert all(source == image["source"] for source in sent), "the same image on every request"
    [start] = [e for e in run.events if isinstance(e, RunStarted)]
    assert start.instructions == [f"AGENTS.md ({len(AGENTS)})", "src/AGENTS.md (33)"]
    assert start.limits["max_rounds"] == 30, "the card asked for 99; the settings allow 30"
    warned = [e.message for e in run.events if isinstance(e, Notice)]
    assert any("max_rounds = 99" in w and "allow 30" in w for w in warned), warned
    assert any("BACKLOG.MD GUIDELINES" in w for w in warned), warned
    [log] = (root / ".cardrunner/runs").glob("*.jsonl")
    logged = next(e for e in read_events(read_log(log)) if isinstance(e, RunStarted))
    assert logged.system == system, "the log keeps the system prompt a resume sends again"
    shown = cli(root, "log", str(log))
    assert f"instructions: AGENTS.md ({len(AGENTS)}), src/AGENTS.md (33)" in shown.stdout
    assert "images: cards/shot.png" in shown.stdout
    assert logged.images == [{"path": "cards/shot.png", "file": "0.png", "media_type": "image/png"}]


async def test_project_instructions_switched_off_send_only_the_rules(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root, top_toml="")
    (root / "AGENTS.md").write_text(AGENTS)
    toml = root / "cardrunner.toml"
    toml.write_text(toml.read_text() + "\n[agent]\nproject_instructions = false\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "no project instructions")
    run = await run_through_api(root, card, fix_transcript())
    assert run.result.status == "done", (run.result.reason, run.result.detail)
    assert system_text(run.bodies[0]) == INSTRUCTIONS.read_text(encoding="utf-8")
    [start] = [e for e in run.events if isinstance(e, RunStarted)]
    assert start.instructions == []


def test_the_cli_refuses_a_card_whose_dependency_is_not_done(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    (root / "cards" / "login.md").write_text(
        "---\ntitle: Add login\nstate: In Work\n---\nLog in.\n\n## Acceptance criteria\n\n- ok\n"
    )
    ask(card, "depends_on: Add login\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a card that waits")
    refused = cli(root, "run", str(card), "--replay", "none.json")
    assert refused.returncode == 2, refused.stderr
    assert 'waits for "Add login" (In Work)' in refused.stderr and "--yes" in refused.stderr
    assert not (root / ".cardrunner" / "runs").exists() or not list(
        (root / ".cardrunner" / "runs").glob("*.jsonl")
    ), "no run was started"
    checked = cli(root, "check")
    assert "depends_on" not in checked.stdout, "a dependency that exists is no problem"
    ask(card, "max_rounds: many\nmodel: claude-nonesuch\n")
    checked = cli(root, "check")
    assert "'max_rounds' should be a whole number" in checked.stdout
    plan = json.loads(cli(root, "plan").stdout)
    assert [s["card"] for s in plan["skipped"]] == ["cards/fix-add.md"]


async def test_a_resume_sends_the_system_and_the_image_the_run_began_with(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    (root / "AGENTS.md").write_text(AGENTS)
    (root / "cards" / "shot.png").write_bytes(PNG)
    ask(card, "max_rounds: 3\n")
    card.write_text(card.read_text().replace("returns -1.", "returns -1. ![bug](shot.png)"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a card with a screenshot and a small budget")
    steps = fix_transcript()
    first = await run_through_api(root, card, steps[:3])
    assert first.result.reason == "max_rounds", (first.result.reason, first.result.detail)
    (root / "AGENTS.md").write_text("Rules changed since the run began.\n")
    (root / "cards" / "shot.png").write_bytes(PNG + b"changed")
    git(root, "commit", "-qm", "rules and screenshot changed", "AGENTS.md", "cards/shot.png")
    later = [  # a second server: ids of its own (the real API's never repeat)
        {
            **step,
            "content": [
                {"id": f"toolu_r{i}_{j}", **b} if b["type"] == "tool_use" else b
                for j, b in enumerate(step["content"])
            ],
        }
        for i, step in enumerate(steps[3:])
    ]
    resumed = await run_through_api(root, card, later, resume_rounds=10, check_history=False)
    assert resumed.result.status == "done", (resumed.result.reason, resumed.result.detail)
    assert not resumed.api.violations, resumed.api.violations
    bodies = [*first.bodies, *resumed.bodies]
    assert len({system_text(b) for b in bodies}) == 1 and "keep `add` pure" in system_text(
        bodies[0]
    )
    sent = {b["messages"][0]["content"][1]["source"]["data"] for b in bodies}
    assert sent == {base64.b64encode(PNG).decode()}, "the image as the run first sent it"
