"""How fast `cardrunner lsp` ends when its editor goes away in the middle of a run.

For each sample, two servers on the same workspace: one gets `exit` (without `shutdown`) while
idle — the baseline, what ending costs with nothing to stop — and one gets `exit` while a card
sits in a 30 s test command, so the server must stop the run, kill its process group, write the
result to the log and the card, and end. The figure is the time from sending `exit` to the
process's end; the ratio is mid-run / idle (the target: the run's wind-down adds little to the
exit itself, and both end well within a second). Also checked each time: the exit status is 1
and the log has its result.

    .venv/bin/python bench/editor_gone.py [--samples 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
from pathlib import Path

from _common import VENV_BIN, header, median, verdict
from _lsp import LspProcess, Received

TARGET = 3.0
TOML = """cards = "cards"
replay = "transcripts"
[paths]
read = ["."]
write = ["src"]
[commands]
test = ["python", "-c", "import time; time.sleep(30)"]
"""
CARD = "---\ntitle: Slow\nstate: New\n---\nWait.\n\n## Acceptance criteria\n\n- It waits.\n"
TRANSCRIPT = {
    "responses": [
        {
            "content": [{"type": "tool_use", "name": "run_tests", "input": {}}],
            "stop_reason": "tool_use",
        },
        {"content": [{"type": "text", "text": "RESULT: failed: never"}], "stop_reason": "end_turn"},
    ]
}


def workspace(root: Path) -> Path:
    for folder in ("src", "cards", "transcripts"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "cardrunner.toml").write_text(TOML)
    (root / ".gitignore").write_text(".cardrunner/\n")
    (root / "cards" / "slow.md").write_text(CARD)
    (root / "transcripts" / "slow.json").write_text(json.dumps(TRANSCRIPT))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(
            ["git", "-c", "user.email=b@x", "-c", "user.name=b", *argv], cwd=root, check=True
        )
    return root / "cards" / "slow.md"


async def exit_time(root: Path, card: Path | None) -> tuple[float, int | None]:
    """Seconds from `exit` to the process's end, and its status; mid-run when `card` is given."""
    server = LspProcess([str(VENV_BIN / "cardrunner"), "lsp"], cwd=root)
    await server.spawn()
    await server.initialize(root)
    run_id = None
    if card is not None:
        started = await server.request(
            "workspace/executeCommand",
            {"command": "cardrunner.runCard", "arguments": [card.as_uri()]},
        )
        run_id = started["runId"]

        def in_tests(r: Received) -> bool:
            return r.method == "textDocument/publishDiagnostics" and any(
                "run_tests" in d["message"] for d in r.params["diagnostics"]
            )

        await server.wait_for(in_tests, 60)
    else:
        await server.request(
            "textDocument/codeLens", {"textDocument": {"uri": (root / "x.md").as_uri()}}
        )
    assert server.proc is not None
    sent = time.perf_counter()
    server.notify("exit", None)
    async with asyncio.timeout(30):
        code = await server.proc.wait()
    took = time.perf_counter() - sent
    await server.close()
    if run_id is not None:
        last = json.loads(
            (root / ".cardrunner" / "runs" / f"{run_id}.jsonl").read_text().splitlines()[-1]
        )
        assert last["type"] == "result" and last["data"]["reason"] == "interrupted", last
    return took, code


async def main(samples: int) -> None:
    header("cardrunner lsp: exit while a card runs vs exit while idle")
    idle, busy = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(samples):
            card = workspace(Path(tmp) / f"w{n}")
            took, code = await exit_time(card.parent.parent, None)
            assert code == 1, code
            idle.append(took)
            took, code = await exit_time(card.parent.parent, card)
            assert code == 1, code
            busy.append(took)
    ratio = median(busy) / median(idle)
    print(f"exit → process end, idle:    median {median(idle) * 1000:.0f} ms ({samples} samples)")
    print(
        f"exit → process end, mid-run: median {median(busy) * 1000:.0f} ms, max {max(busy) * 1000:.0f} ms"
    )
    print(f"mid-run / idle: {ratio:.2f}x  {verdict(ratio, TARGET)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=5)
    asyncio.run(main(parser.parse_args().samples))
