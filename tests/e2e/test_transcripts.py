"""Transcripts as a feature: the demo's load as the documented format, and any run's log turns
into a transcript that replays the same run — through the real runner, tools and UI server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.agent.events import RunFinished, RunStarted, ToolFinished
from cardrunner.agent.review import AutoApprover
from cardrunner.apirules.binding import SignatureBinder
from cardrunner.config.loading import load_settings
from cardrunner.config.paths import StatePaths
from cardrunner.demo import CARDS, create_workspace
from cardrunner.demo.tour import TRANSCRIPTS, transcript_for
from cardrunner.models.scripted import ScriptedModel, load_transcript
from cardrunner.record.transcript import Transcript, transcript_from_log, transcript_json
from cardrunner.run.options import RunOptions
from cardrunner.run.session import run_card
from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.project import cli, fix_transcript, make_project, write_transcript


@pytest.mark.parametrize("path", sorted(TRANSCRIPTS.glob("*.json")), ids=lambda p: p.stem)
def test_the_demo_transcripts_are_in_the_documented_format(path: Path) -> None:
    transcript = Transcript.model_validate_json(path.read_text())
    assert transcript.responses[-1].content[-1]["text"].endswith("RESULT: done")
    assert len(transcript.responses) == len(load_transcript(path))


async def play(root: Path, card: str, model: ScriptedModel) -> tuple[RunFinished, list[str]]:
    settings, problems = load_settings(root)
    assert problems == []
    options = RunOptions(
        root=root, card_path=root / card, settings=settings, model=model, approver=AutoApprover()
    )
    events = [e async for e in run_card(options)]
    model.assert_complete()
    result = events[-1]
    assert isinstance(result, RunFinished)
    started = next(e for e in events if isinstance(e, RunStarted))
    calls = [
        f"{e.name} {json.dumps(e.arguments, sort_keys=True)}"
        for e in events
        if isinstance(e, ToolFinished)
    ]
    assert started.run_id
    return result, calls


async def test_a_demo_run_round_trips_through_its_log(tmp_path: Path) -> None:
    card = CARDS[0]
    first_root = create_workspace(tmp_path / "first")
    first, first_calls = await play(first_root, card, ScriptedModel.from_file(transcript_for(card)))
    assert first.status == "done", (first.reason, first.detail)
    log = next(StatePaths(first_root).runs.glob("*.jsonl"))
    out = tmp_path / "replayed.json"
    out.write_text(transcript_json(transcript_from_log(log)))
    again_root = create_workspace(tmp_path / "again")
    again, again_calls = await play(again_root, card, ScriptedModel.from_file(out))
    assert again.status == "done", (again.reason, again.detail)
    assert again_calls == first_calls  # the same calls with the same arguments, edits resolved
    assert (again.rounds, again.tool_calls, again.usage.total, again.cost_usd) == (
        first.rounds,
        first.tool_calls,
        first.usage.total,
        first.cost_usd,
    )
    for path in ("invoice/model.py", "tests/test_model.py"):
        assert (again_root / path).read_text() == (first_root / path).read_text()


def test_the_cli_writes_a_transcript_that_replays_to_done(tmp_path: Path) -> None:
    card = make_project(tmp_path / "a")
    original = write_transcript(tmp_path / "original.json", fix_transcript())
    ran = cli(tmp_path / "a", "run", "cards/fix-add.md", "--yes", "--replay", str(original))
    assert ran.returncode == 0, ran.stderr
    log = tmp_path / "a" / yaml.safe_load(card.read_text().split("---")[1])["last_run"]["log"]
    made = cli(tmp_path, "transcript", str(log), "-o", "made.json")
    assert made.returncode == 0, made.stderr
    assert "7 responses written to made.json" in made.stderr
    stdout = cli(tmp_path, "transcript", str(log))
    assert json.loads(stdout.stdout) == json.loads((tmp_path / "made.json").read_text())
    card_b = make_project(tmp_path / "b")
    again = cli(
        tmp_path / "b", "run", "cards/fix-add.md", "--yes", "--replay", str(tmp_path / "made.json")
    )
    assert again.returncode == 0, again.stderr
    runs = [yaml.safe_load(c.read_text().split("---")[1])["last_run"] for c in (card, card_b)]
    assert runs[0]["tokens"] == runs[1]["tokens"] and runs[0]["rounds"] == runs[1]["rounds"]
    estimated = cli(tmp_path, "transcript", str(log), "--estimate-usage")
    assert estimated.returncode == 0 and '"usage"' not in estimated.stdout
    (tmp_path / "x.jsonl").write_text('{"type": "round"}\n')
    bad = cli(tmp_path, "transcript", "x.jsonl")
    assert bad.returncode == 2 and "is not a run log" in bad.stderr


def test_the_documented_example_replays_to_done(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "transcripts.md").read_text()
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    card = make_project(tmp_path / "p")
    (tmp_path / "example.json").write_text(example)
    ran = cli(tmp_path / "p", "run", "cards/fix-add.md", "--yes", "--replay", "../example.json")
    assert ran.returncode == 0, ran.stderr
    assert yaml.safe_load(card.read_text().split("---")[1])["state"] == "Done"


def test_a_transcript_of_a_run_against_another_endpoint_replays_with_its_signatures(
    tmp_path: Path,
) -> None:
    """The thinking signatures of a real run are the API's, made with a key cardrunner does not
    have: the replay keeps them as recorded instead of checking them with its own key."""
    card = make_project(tmp_path / "a")
    real_api = SignatureBinder(key=b"the real API's own key")
    with FakeMessagesAPI(fix_transcript(), binder=real_api) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test-real"}
        ran = cli(tmp_path / "a", "run", "cards/fix-add.md", "--yes", env=env)
        assert ran.returncode == 0, ran.stderr
    log = tmp_path / "a" / yaml.safe_load(card.read_text().split("---")[1])["last_run"]["log"]
    made = cli(tmp_path, "transcript", str(log), "-o", "made.json")
    assert made.returncode == 0, made.stderr
    steps = json.loads((tmp_path / "made.json").read_text())["responses"]
    recorded = [b["signature"] for s in steps for b in s["content"] if b["type"] == "thinking"]
    assert recorded and all(r.startswith("sig_") for r in recorded)
    ours = SignatureBinder()  # what cardrunner's own key makes of the same block: not these
    first = [dict(b) for b in steps[0]["content"]]
    for block in first:
        block.pop("signature", None)
    ours.sign_response(api.requests[0].body, first)
    assert first[0]["signature"] != recorded[0]
    make_project(tmp_path / "b")
    again = cli(
        tmp_path / "b", "run", "cards/fix-add.md", "--yes", "--replay", str(tmp_path / "made.json")
    )
    assert again.returncode == 0, again.stderr


def _counted_from_0(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`steps` as a transcript wrote them when `report_criterion` counted criteria from 0."""
    return [
        {
            **step,
            "content": [
                {**b, "input": {**b["input"], "index": b["input"]["index"] - 1}}
                if b.get("name") == "report_criterion"
                else b
                for b in step["content"]
            ],
        }
        for step in steps
    ]


def test_a_transcript_made_when_criteria_counted_from_0_replays_only_when_it_says_so(
    tmp_path: Path,
) -> None:
    """An old transcript is never played as if it counted from 1 (each report would land on the
    criterion before the one meant): unmarked, it is refused and the key named; marked
    `criteria_from: 0`, it replays to Done. Its log turns back into a transcript from 1."""
    card = make_project(tmp_path / "a")
    old = _counted_from_0(fix_transcript())
    unmarked = write_transcript(tmp_path / "unmarked.json", old)
    refused = cli(tmp_path / "a", "run", "cards/fix-add.md", "--yes", "--replay", str(unmarked))
    assert refused.returncode == 2 and '"criteria_from": 0' in refused.stdout + refused.stderr
    assert "state: New" in card.read_text()
    marked = tmp_path / "marked.json"
    marked.write_text(json.dumps({"criteria_from": 0, "responses": old}))
    ran = cli(tmp_path / "a", "run", "cards/fix-add.md", "--yes", "--replay", str(marked))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    record = yaml.safe_load(card.read_text().split("---")[1])["last_run"]
    assert record["cost_basis"] == "estimate"  # a replay: nobody was billed its cost
    log = tmp_path / "a" / record["log"]
    again = transcript_from_log(log)
    assert again.criteria_from == 1  # the run counted from 1: its log holds what was played
    assert '"criteria_from"' not in transcript_json(again)
    reports = [
        b["input"]["index"]
        for r in again.responses
        for b in r.content
        if b.get("name") == "report_criterion"
    ]
    assert reports == [1, 2]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for spec in lines[0]["data"]["tool_specs"]:  # the same log as an older cardrunner wrote it
        if spec["name"] == "report_criterion":
            spec["input_schema"]["properties"]["index"]["minimum"] = 0
    for line in lines:
        if line["type"] == "round" and line["data"].get("content"):
            line["data"]["content"] = _counted_from_0([line["data"]])[0]["content"]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    made = transcript_from_log(tmp_path / "old.jsonl")
    assert made.criteria_from == 0
    (tmp_path / "made.json").write_text(transcript_json(made))
    played = load_transcript(tmp_path / "made.json")
    assert [
        b["input"]["index"] for r in played for b in r["content"] if "index" in b.get("input", {})
    ] == [1, 2]
