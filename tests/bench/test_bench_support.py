"""The benchmarks' own helpers do what their figures rely on (no timings are asserted here).

The raw LSP client must frame, match answers to requests, answer server requests and read a
process's memory; the board (and client_cpu's paced one) must be a committed git workspace
whose transcripts the scripted model accepts; the statistics and the token formula must be the ones bench/README.md states.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from _board import instant_transcript, make_board  # noqa: E402
from _common import percentile  # noqa: E402
from _lsp import LspProcess, position  # noqa: E402
from client_cpu import PACE, make_workspace  # noqa: E402
from import_memory import one_start  # noqa: E402
from token_cost import billed  # noqa: E402

from cardrunner.config.loading import load_settings  # noqa: E402
from cardrunner.models.scripted import load_transcript  # noqa: E402
from cardrunner.testing.fake_script import load_transcript as load_fake_transcript  # noqa: E402


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 51.0  # rank round(0.5 * 99) = 50 → the 51st value
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([3.0], 99) == 3.0


def test_billed_input_weights_cache_reads_and_writes() -> None:
    usage = {
        "input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 40,
    }
    assert billed(usage) == 100 + 100 + 50


def test_board_is_a_clean_git_workspace_with_playable_transcripts(tmp_path: Path) -> None:
    import subprocess

    cards = make_board(tmp_path / "b", 5, runnable=2, rounds=7)
    assert [c.name for c in cards] == [f"card-{n:04d}.md" for n in range(5)]
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path / "b", capture_output=True, text=True
    )
    assert status.stdout == ""
    transcripts = sorted((tmp_path / "b" / "transcripts").glob("*.json"))
    assert [t.stem for t in transcripts] == ["card-0000", "card-0001"]
    assert len(load_transcript(transcripts[0])) == 8
    assert len(load_fake_transcript(transcripts[0])) == 8
    calls = [s["content"][1]["input"] for s in instant_transcript(7)["responses"][:-1]]
    assert all(a != b for a, b in itertools.pairwise(calls)), "no repeated call: no stall"


def test_client_cpu_workspace_commits_paced_rounds_the_limits_allow(tmp_path: Path) -> None:
    import subprocess

    root = tmp_path / "c"
    cards = make_workspace(root, 2, rounds=250)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True)
    assert status.stdout == b"", "settings only count once committed"
    settings, problems = load_settings(root)
    assert not problems, problems
    assert settings.limits.max_rounds > 250 and settings.limits.max_tokens == 0
    assert settings.commands.build == ["sleep", str(PACE)] and settings.sandbox.mode == "off"
    steps = load_transcript(root / "transcripts" / f"{cards[0].stem}.json")
    assert len(steps) == 251 and all(
        [b["name"] for b in s["content"][1:]][-1] == "build_app" for s in steps[:-1]
    )
    reads = [s["content"][1]["input"] for s in steps[:-1]]
    assert all(a != b for a, b in itertools.pairwise(reads)), "no repeated call: no stall"


@pytest.mark.timeout(60)
async def test_raw_client_talks_to_the_minimal_server(tmp_path: Path) -> None:
    server = LspProcess([sys.executable, str(BENCH / "minimal_server.py")], tmp_path)
    await server.spawn()
    try:
        init = await server.initialize(tmp_path)
        assert init["capabilities"]["hoverProvider"]
        uri = (tmp_path / "x.md").as_uri()
        took, hover = await server.timed("textDocument/hover", position(uri, 4, 0))
        assert hover["contents"] == "line 4" and took > 0
        with pytest.raises(RuntimeError, match="-32601"):  # MethodNotFound comes back as an error
            await server.request("bench/nothing", None)
        assert server.rss_kib() > 1000
    finally:
        await server.close()
    assert server.proc is not None and server.proc.returncode == 0


@pytest.mark.timeout(60)
async def test_layered_server_loads_the_layers_it_is_given(tmp_path: Path) -> None:
    from tests.support.project import make_project

    make_project(tmp_path)
    cards = sorted((tmp_path / "cards").glob("*.md"))
    assert cards, "the project has cards to parse"
    argv = [sys.executable, str(BENCH / "layered_server.py"), "settings", "cards", "watch"]
    server = LspProcess(argv, tmp_path)
    await server.spawn()
    try:
        await server.initialize(tmp_path)
        logged = await server.wait_for(lambda r: r.method == "window/logMessage", 30)
        message = logged.params["message"]
        assert message == f"layers loaded: settings, cards, watch; {len(cards)} cards parsed"
    finally:
        await server.close()


def test_import_memory_measures_each_step_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """Each step is imported (or the settings read) in its turn, RSS read after it; pydantic
    is not loaded before it is asked for, so its step adds its megabytes."""
    from tests.support.project import make_project

    make_project(tmp_path)
    steps = ["cardrunner.card.parse", "pydantic", "load_settings"]
    got = one_start(tmp_path, steps)
    assert [name for name, _ in got] == ["pygls + lsprotocol", *steps]
    rss = dict(got)
    assert rss["pygls + lsprotocol"] > 10_000
    assert rss["pydantic"] - rss["cardrunner.card.parse"] > 1_000  # KiB: pydantic came here
