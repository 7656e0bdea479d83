"""McpHub against real MCP servers (our test server over stdio and Streamable HTTP)."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardrunner.agent.events import Event, Notice
from cardrunner.agent.toolpool import MAX_RESULT_CHARS, TOOL_NAME_RE, ToolPool
from cardrunner.config.loading import has_clash, load_settings
from cardrunner.config.settingsfiles import USER_SOURCE, McpServer
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.sandbox import BASE_ENV
from cardrunner.tools.mcp import transport as mcp_transport
from cardrunner.tools.mcp.hub import McpHub, McpStartError
from tests.support.mcp_harness import (
    context,
    free_port,
    http_server,
    recorded_pids,
    server_spec,
    wait_gone,
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def no_server_left(run_dir: Path) -> Iterator[list[int]]:
    """After each test, every server process (and child) it caused must be gone."""
    started: list[int] = []
    yield started
    pids = sorted(set(started + recorded_pids(run_dir)))
    assert not wait_gone(pids), f"server processes left running: {wait_gone(pids, 0)}"


def hub(run_dir: Path, root: Path, **servers: McpServer) -> McpHub:
    return McpHub(servers, run_dir, root, groups=ProcessGroups())


async def test_tools_are_listed_with_prefixed_names_schema_and_timeout(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec(timeout=40)) as h:
        tools = {t.name: t for t in h.tools()}
        assert h.failures == {} and h.warnings == []
    assert {"mcp__t__echo", "mcp__t__add", "mcp__t__crash", "mcp__t__hang"} <= set(tools)
    echo = tools["mcp__t__echo"]
    assert echo.description == "Return `text` unchanged."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.timeout > 40  # above the server's, so the hub's own message wins at the gate


async def test_text_blocks_pass_through_without_json_escaping(
    run_dir: Path, tmp_path: Path
) -> None:
    text = 'first line\nsecond "quoted" line\ttab — ünïcode'
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        result = await h.call("t", "echo", {"text": text})
    assert result.text == text and not result.is_error


async def test_structured_content_only_result_becomes_compact_json(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        result = await h.call("t", "add", {"a": 2, "b": 3})
    assert result.text == '{"a":2,"b":3,"sum":5}'


async def test_image_is_saved_referenced_and_passed_as_image(run_dir: Path, tmp_path: Path) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        result = await h.call("t", "image", {})
    saved = list((run_dir / "mcp").glob("*.png"))
    assert len(saved) == 1 and saved[0].read_bytes().startswith(b"\x89PNG")
    assert str(saved[0].relative_to(tmp_path)) in result.text
    assert [i.media_type for i in result.images] == ["image/png"]
    assert base64.b64decode(result.images[0].data) == saved[0].read_bytes()


async def test_audio_embedded_resources_and_links(run_dir: Path, tmp_path: Path) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        audio = await h.call("t", "audio", {})
        embedded = await h.call("t", "embedded", {})
        links = await h.call("t", "links", {})
    wav = next((run_dir / "mcp").glob("*.wav"))
    assert wav.read_bytes().startswith(b"RIFF") and str(wav.relative_to(tmp_path)) in audio.text
    assert audio.images == []
    assert "[resource file:///notes.txt]\nline 1\nline 2" in embedded.text
    blob = next((run_dir / "mcp").glob("*.bin"))
    assert (
        blob.read_bytes() == b"\x00\x01binary" and str(blob.relative_to(tmp_path)) in embedded.text
    )
    assert links.text == "README <file:///project/README.md>"


async def test_tool_error_and_unknown_tool_are_is_error_results(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        failed = await h.call("t", "fail", {})
        unknown = await h.call("t", "nope", {})
        no_server = await h.call("nobody", "echo", {})
    assert failed.is_error and "the widget is broken" in failed.text
    # Our (MCPServer-based) server answers an unknown tool with is_error, not a protocol error.
    assert unknown.is_error and unknown.text == "Unknown tool: nope"
    assert no_server.is_error and "'nobody' is not available" in no_server.text


async def test_stray_stdout_line_from_a_server_does_not_break_the_connection(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        noisy = await h.call("t", "noisy", {})
        after = await h.call("t", "echo", {"text": "fine"})
    assert (noisy.text, after.text) == ("answered anyway", "fine")


async def test_crash_mid_call_reports_exit_status_then_restarts_once(
    run_dir: Path, tmp_path: Path, no_server_left: list[int]
) -> None:
    events: list[Event] = []
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        first_pid = h.pids()["t"]
        crashed = await h.call("t", "crash", {}, context(events))
        assert crashed.is_error
        assert "MCP server 't' exited with status 3 during the call to crash" in crashed.text
        assert "crashing on purpose" in crashed.text  # the stderr tail
        assert wait_gone([first_pid]) == []
        again = await h.call("t", "echo", {"text": "back"}, context(events))
        assert not again.is_error and again.text.endswith("\nback")
        assert "was restarted" in again.text
        assert h.pids()["t"] != first_pid
    assert any(isinstance(e, Notice) and "restarted" in e.message for e in events)


async def test_failed_restart_says_so_and_the_server_stays_down(
    run_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "no-restart"
    async with hub(run_dir, tmp_path, t=server_spec(MCP_TEST_FAIL_IF_EXISTS=str(marker))) as h:
        marker.touch()
        crashed = await h.call("t", "crash", {})
        restart = await h.call("t", "echo", {"text": "x"})
        later = await h.call("t", "echo", {"text": "x"})
    assert crashed.is_error and "status 3" in crashed.text
    assert restart.is_error and "could not be restarted" in restart.text
    assert f"refusing to start: {marker} exists" in restart.text
    assert later.is_error and "is not available" in later.text


async def test_restart_cancelled_midway_is_tried_again_on_the_next_call(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec(MCP_TEST_START_DELAY="2")) as h:
        await h.call("t", "crash", {})
        before = set(recorded_pids(run_dir))
        restarting = asyncio.create_task(h.call("t", "echo", {"text": "x"}))
        async with asyncio.timeout(30):
            while set(recorded_pids(run_dir)) == before:  # noqa: ASYNC110 (another process)
                await asyncio.sleep(0.05)
        restarting.cancel()  # e.g. the gate's timeout, or the run being cancelled
        with pytest.raises(asyncio.CancelledError):
            await restarting
        again = await h.call("t", "echo", {"text": "back"})
    assert not again.is_error and again.text.endswith("\nback")
    assert len(set(recorded_pids(run_dir))) == 3  # first start, cancelled restart, restart


async def test_hanging_call_times_out_and_the_server_keeps_serving(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(run_dir, tmp_path, t=server_spec(timeout=10)) as h:
        assert h.failures == {}
        pool = ToolPool(h.tools())
        hung = await pool.execute("mcp__t__hang", {}, context())
        after = await h.call("t", "echo", {"text": "still here"})
    assert hung.is_error
    assert hung.text == "hang on MCP server 't' did not answer within 10 s; cancelled."
    assert after.text == "still here"


async def test_failed_start_of_an_optional_server_is_reported_with_stderr(
    run_dir: Path, tmp_path: Path
) -> None:
    async with hub(
        run_dir, tmp_path, good=server_spec(), bad=server_spec(MCP_TEST_FAIL_START="no config here")
    ) as h:
        names = [t.name for t in h.tools()]
        result = await h.call("bad", "echo", {"text": "x"})
    assert set(h.failures) == {"bad"}
    assert "exited with status 2 during start-up" in h.failures["bad"]
    assert "no config here" in h.failures["bad"]
    assert "mcp__good__echo" in names and not any(n.startswith("mcp__bad__") for n in names)
    assert result.is_error and "no config here" in result.text


async def test_failed_start_of_a_required_server_raises_with_stderr_tail(
    run_dir: Path, tmp_path: Path
) -> None:
    h = hub(
        run_dir,
        tmp_path,
        good=server_spec(),
        must=server_spec(required=True, MCP_TEST_FAIL_START="license missing"),
    )
    with pytest.raises(McpStartError) as caught:
        await h.start()
    assert caught.value.server == "must"
    assert "license missing" in caught.value.message and "'must'" in str(caught.value)
    await h.aclose()  # idempotent after the failed start


async def test_start_timeout_and_missing_command(run_dir: Path, tmp_path: Path) -> None:
    async with hub(
        run_dir,
        tmp_path,
        slow=server_spec(timeout=1.5, MCP_TEST_START_DELAY="60"),
        missing=McpServer(command=str(tmp_path / "no-such-server")),
    ) as h:
        assert h.tools() == []
    assert "did not start within 1.5 s" in h.failures["slow"]
    assert "command not found" in h.failures["missing"]


async def test_environment_is_minimal_plus_configured(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SOME_TOKEN", "passed-on-purpose")
    spec = server_spec(GREETING="hello", TOKEN="${SOME_TOKEN}", FALLBACK="${UNSET_XYZ:-dflt}")
    async with hub(run_dir, tmp_path, t=spec) as h:
        result = await h.call("t", "environment", {})
    env = dict(line.split("=", 1) for line in result.text.splitlines())
    assert "ANTHROPIC_API_KEY" not in env and "sk-ant-secret" not in result.text
    assert "SOME_TOKEN" not in env
    assert env["GREETING"] == "hello" and env["TOKEN"] == "passed-on-purpose"
    assert env["FALLBACK"] == "dflt"
    assert env["CARDRUNNER_RUN_DIR"] == str(run_dir)
    assert env["PATH"] == os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    assert set(env) <= {*BASE_ENV, "CARDRUNNER_RUN_DIR", "GREETING", "TOKEN", "FALLBACK"} | {
        "LC_CTYPE",  # Python's UTF-8 coercion may set it in the child
    }


async def test_unset_variable_in_config_fails_that_server(run_dir: Path, tmp_path: Path) -> None:
    async with hub(run_dir, tmp_path, t=server_spec(TOKEN="${UNSET_XYZ_TOKEN}")) as h:
        assert h.tools() == []
    assert "env.TOKEN uses ${UNSET_XYZ_TOKEN}, which is not set" in h.failures["t"]


async def test_result_through_the_gate_is_cut_with_a_note(run_dir: Path, tmp_path: Path) -> None:
    async with hub(run_dir, tmp_path, t=server_spec()) as h:
        pool = ToolPool(h.tools())
        big = await pool.execute("mcp__t__big", {}, context())
        invalid = await pool.execute("mcp__t__echo", {"txt": "x"}, context())
    assert len(big.text) == MAX_RESULT_CHARS and not big.is_error
    assert big.text.startswith("line 00000 of the big output\nline 00001")
    assert "[output cut: showed 4000 of 10000 characters." in big.text
    assert invalid.is_error and "Invalid arguments for mcp__t__echo" in invalid.text


async def test_invalid_characters_long_names_and_collisions(run_dir: Path, tmp_path: Path) -> None:
    long_name = "s" * 121  # mcp__ + 121 + __ = 128: every tool is cut to the same name
    async with hub(
        run_dir,
        tmp_path,
        **{"my.srv": server_spec(), "my_srv": server_spec(), long_name: server_spec()},
    ) as h:
        names = [t.name for t in h.tools()]
    assert all(TOOL_NAME_RE.match(n) for n in names) and len(names) == len(set(names))
    assert "mcp__my_srv__echo" in names
    offered = sum(n.startswith("mcp__my_srv__") for n in names)
    assert sum("of 'my_srv' skipped: the name is taken" in w for w in h.warnings) == offered
    assert sum(n.startswith(f"mcp__{long_name}") for n in names) == 1
    assert any("'my.srv' is offered as mcp__my_srv__echo" in w for w in h.warnings)
    assert any("of 'my_srv' skipped: the name is taken" in w for w in h.warnings)


async def test_started_in_one_task_called_from_another_closed_from_the_first(
    run_dir: Path, tmp_path: Path
) -> None:
    h = hub(run_dir, tmp_path, t=server_spec())
    await h.start()
    results = await asyncio.gather(
        asyncio.create_task(h.call("t", "echo", {"text": "one"})),
        asyncio.create_task(h.call("t", "echo", {"text": "two"})),
    )
    await h.aclose()
    assert [r.text for r in results] == ["one", "two"]
    closed = await h.call("t", "echo", {"text": "x"})
    assert closed.is_error and "closed" in closed.text


async def test_cancelled_run_closes_servers_even_with_a_call_in_flight(
    run_dir: Path, tmp_path: Path
) -> None:
    in_flight: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    call_result: list[str] = []

    async def run() -> None:
        async with hub(run_dir, tmp_path, t=server_spec()) as h:

            async def hang() -> None:
                call_result.append((await h.call("t", "hang", {})).text)

            caller = asyncio.create_task(hang())
            in_flight.set_result(None)
            await asyncio.sleep(3600)  # cancelled by the test
            await caller

    task = asyncio.create_task(run())
    await in_flight
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorded_pids(run_dir) and wait_gone(recorded_pids(run_dir)) == []


async def test_start_cancelled_midway_leaves_no_process(run_dir: Path, tmp_path: Path) -> None:
    h = hub(run_dir, tmp_path, slow=server_spec(timeout=60, MCP_TEST_START_DELAY="60"))
    starting = asyncio.create_task(h.start())
    async with asyncio.timeout(30):
        while not recorded_pids(run_dir):  # noqa: ASYNC110 (written by another process)
            await asyncio.sleep(0.05)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert wait_gone(recorded_pids(run_dir)) == []


async def test_server_ignoring_signals_and_its_child_are_killed(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_transport, "GRACE_SECONDS", 0.5)
    monkeypatch.setattr(mcp_transport, "TERM_SECONDS", 0.5)
    async with hub(run_dir, tmp_path, t=server_spec(MCP_TEST_STUBBORN="1")) as h:
        child = int((await h.call("t", "spawn_child", {})).text)
        server = h.pids()["t"]
    assert wait_gone([server, child]) == []


async def test_streamable_http_server(run_dir: Path, tmp_path: Path) -> None:
    with http_server(run_dir) as (url, _proc):
        async with hub(run_dir, tmp_path, web=McpServer(url=url, timeout=10)) as h:
            names = [t.name for t in h.tools()]
            echo = await h.call("web", "echo", {"text": "over\nhttp"})
            unknown = await h.call("web", "nope", {})
            image = await h.call("web", "image", {})
    assert "mcp__web__echo" in names and h.pids() == {}
    assert echo.text == "over\nhttp"
    assert unknown.is_error and unknown.text == "Unknown tool: nope"
    assert image.images and image.images[0].media_type == "image/png"


async def test_http_headers_are_sent_with_variables_expanded(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEB_TOKEN", "t0k3n")
    with http_server(run_dir) as (url, _proc):
        spec = McpServer(
            url=url, headers={"Authorization": "Bearer ${WEB_TOKEN}"}, source=USER_SOURCE
        )
        async with hub(run_dir, tmp_path, web=spec) as h:
            sent = await h.call("web", "header", {"name": "Authorization"})
    assert sent.text == "Bearer t0k3n"


async def test_http_server_gone_mid_run_reconnects_on_the_next_call(
    run_dir: Path, tmp_path: Path
) -> None:
    port = free_port()
    with http_server(run_dir, port) as (url, proc):
        async with hub(run_dir, tmp_path, web=McpServer(url=url, timeout=10)) as h:
            proc.kill()
            proc.wait(10)
            gone = await h.call("web", "echo", {"text": "x"})
            with http_server(run_dir, port):
                again = await h.call("web", "echo", {"text": "back"})
    assert gone.is_error and "MCP server 'web' lost the connection during the call" in gone.text
    assert "It will be reconnected on the next call" in gone.text
    assert not again.is_error and again.text.endswith("\nback") and "reconnected" in again.text


def test_mcp_json_and_toml_name_clash_is_reported(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        '[mcp.git]\ncommand = "python"\nargs = ["-m", "mcp_server_git"]\n', encoding="utf-8"
    )
    (tmp_path / ".mcp.json").write_text(
        '{"mcpServers": {"git": {"command": "other-git"}, "web": {"type": "http", '
        '"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${T}"}}}}',
        encoding="utf-8",
    )
    settings, problems = load_settings(tmp_path)
    assert has_clash(problems)
    [clash] = [p for p in problems if p.file == ".mcp.json"]
    assert clash.key == "mcpServers.git" and "[mcp.git] in cardrunner.toml" in clash.message
    assert settings.mcp["git"].command == "python"  # the TOML definition stays
    web = settings.mcp["web"]
    assert web.url == "http://127.0.0.1:9/mcp" and web.source == ".mcp.json"
    assert web.headers == {"Authorization": "Bearer ${T}"}  # expanded at start, not here


def test_mcp_json_problems_name_the_file_and_the_server(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        '{"mcpServers": {"old": {"type": "sse", "url": "http://x/sse"}, '
        '"both": {"command": "a", "url": "http://b"}, "neg": {"command": "a", "timeout": -1}, '
        '"extra": {"command": "a", "cwd": "/tmp"}}}',
        encoding="utf-8",
    )
    settings, problems = load_settings(tmp_path)
    found = {(p.file, p.key) for p in problems}
    assert found == {
        (".mcp.json", "mcpServers.old.type"),
        (".mcp.json", "mcpServers.both"),
        (".mcp.json", "mcpServers.neg.timeout"),
        (".mcp.json", "mcpServers.extra"),
    }
    assert set(settings.mcp) == {"extra"} and not has_clash(problems)
