"""Append-only conversations through the real SDK and the strict fake (prefix checks on):
`system` and `tools` are built once per run and sent byte-identical on every request, after a
resume with changed settings too; a changed MCP tool list is announced, never resent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cardrunner.apirules.conversation import canonical_content
from cardrunner.run.resume import rebuild
from tests.support.api_run import run_through_api
from tests.support.mcp_harness import TEST_SERVER
from tests.support.project import FIXED, final, git, make_project, report, turn, use


def _set_toml(root: Path, old: str, new: str) -> None:
    toml = root / "cardrunner.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))


def _with_ids(steps: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """A second server hands out its own tool_use ids; the real API's never repeat."""
    return [
        {
            **step,
            "content": [
                {**b, "id": f"toolu_{tag}_{i}_{j}"} if b["type"] == "tool_use" else b
                for j, b in enumerate(step["content"])
            ],
        }
        for i, step in enumerate(steps)
    ]


def _same_prefix(bodies: list[dict[str, Any]]) -> None:
    """Every request carried the same `system` and `tools`, byte for byte."""
    first = bodies[0]
    for body in bodies[1:]:
        assert json.dumps(body["system"]) == json.dumps(first["system"])
        assert json.dumps(body["tools"]) == json.dumps(first["tools"])


async def test_resume_after_a_limit_with_a_command_and_a_path_added_keeps_the_prefix(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    card = make_project(root)
    _set_toml(root, 'read = ["."]', 'read = ["src"]')
    _set_toml(
        root, 'test = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n', ""
    )
    _set_toml(root, "max_rounds = 30", "max_rounds = 3")
    git(root, "commit", "-qam", "fewer settings")
    first = await run_through_api(
        root,
        card,
        [
            turn(use("list_files", path="src"), think=""),  # empty, as under the default display
            turn(use("read_file", path="src/calc.py"), think="It subtracts."),
            turn(use("write_file", path="src/calc.py", content=FIXED), think="Use +."),
        ],
    )
    assert first.result.reason == "max_rounds", first.result
    assert not first.api.violations
    assert "not configured" in next(
        t["description"] for t in first.bodies[0]["tools"] if t["name"] == "run_tests"
    )

    _set_toml(root, 'read = ["src"]', 'read = ["src", "tests"]')
    _set_toml(
        root,
        "[commands]\n",
        '[commands]\ntest = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n',
    )
    git(root, "commit", "-qm", "tests may be read and run", "cardrunner.toml")  # not the fix
    resumed = await run_through_api(
        root,
        card,
        _with_ids(
            [
                turn(use("read_file", path="tests/test_calc.py"), think="Now I may read the test."),
                turn(use("build_app"), use("run_tests"), think="Check."),
                turn(  # _with_ids: thinking is block 0, so run_tests is toolu_resumed_1_2
                    report(1, "add(2, 3) is 5", ("toolu_resumed_1_2", "1 passed")),
                    report(2, "1 passed", ("toolu_resumed_1_2", "1 passed")),
                ),
                turn(use("git_commit", message="card: Adding two numbers subtracts them")),
                final(),
            ],
            "resumed",
        ),
        resume_rounds=10,
        check_history=False,  # a second server: only the signatures tell what was handed out
    )
    assert not resumed.api.violations, resumed.api.violations
    assert resumed.result.status == "done", resumed.result
    _same_prefix(first.bodies + resumed.bodies)
    empty = resumed.bodies[0]["messages"][1]["content"][0]
    assert (empty["type"], empty["thinking"]) == ("thinking", ""), "sent back, empty as it came"
    note = json.dumps(resumed.bodies[0]["messages"][-1])
    assert "resumed" in note and "run_tests changed" in note and "pytest" in note
    assert "the read paths are now src, tests (were src)" in note
    assert (root / "src/calc.py").read_text() == FIXED
    assert "1 passed" in json.dumps(resumed.bodies[2]["messages"][-1])


async def test_an_mcp_server_back_with_other_tools_is_announced_and_tools_stay(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    marker = tmp_path / "relist"
    server = (
        f"\n[mcp.t]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(TEST_SERVER)])}\nrequired = true\n"
        f'env = {{ MCP_TEST_RELIST_IF_EXISTS = "{marker}" }}\n'
    )
    # The server's marker lies outside the workspace, which the sandbox hides by design (its /tmp
    # is private): this test is about the conversation, so the server runs unconfined.
    top = 'require_evidence = false\nsandbox = "off"\n'
    card = make_project(root, top_toml=top, extra_toml=server)

    steps = [
        turn(use("mcp__t__crash"), think="Poke the server."),
        turn(use("mcp__t__echo", text="back?"), think="It crashed; try again."),
        turn(use("mcp__t__big"), use("mcp__t__image"), think="And the others."),
        final("Looked.\nRESULT: done"),
    ]

    def respond(body: dict[str, Any], index: int) -> dict[str, Any]:
        if index == 1:  # the server comes back from its crash with another tool list
            marker.write_text("")
        return steps[index]

    run = await run_through_api(root, card, respond)
    assert not run.api.violations, run.api.violations
    assert run.result.status == "done", run.result
    _same_prefix(run.bodies)
    names = [t["name"] for t in run.bodies[0]["tools"]]
    assert "mcp__t__big" in names and "mcp__t__extra" not in names
    told = run.bodies[2]["messages"][-1]
    assert told["role"] == "system"
    [text] = [b["text"] for b in told["content"]]
    assert "No longer available (calls fail): big" in text
    assert "not offered in this run" in text and "extra" in text
    results = run.bodies[3]["messages"][-1]["content"]
    assert results[0]["is_error"], "the vanished tool fails honestly"

    # the log holds the conversation exactly as sent: images and the announcement included
    [log] = (root / ".cardrunner/runs").glob("*.jsonl")
    rebuilt = [m.wire() for m in rebuild(log).messages]
    sent = [
        {"role": m["role"], "content": canonical_content(m["content"])}
        for m in run.bodies[-1]["messages"]
    ]
    assert rebuilt[:-1] == sent
    image = run.bodies[-1]["messages"][-1]["content"][1]["content"]
    assert [c["type"] for c in image] == ["text", "image"]
