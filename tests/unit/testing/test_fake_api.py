"""The fake Messages API, driven by the real `anthropic` SDK over real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import AsyncAnthropic

from cardrunner.models.anthropic import retryable
from cardrunner.testing.fake_api import FakeMessagesAPI
from cardrunner.testing.fake_script import Fault

MODEL = "claude-sonnet-5-5"
TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


Connect = Callable[..., AsyncAnthropic]


@pytest.fixture
async def client() -> AsyncIterator[Connect]:
    """SDK clients for a fake server, closed at the end of the test."""
    clients: list[AsyncAnthropic] = []

    def connect(api: FakeMessagesAPI | str, **options: Any) -> AsyncAnthropic:
        url = api if isinstance(api, str) else api.base_url
        clients.append(AsyncAnthropic(api_key="sk-test", base_url=url, **options))
        return clients[-1]

    yield connect
    for sdk in clients:
        await sdk.close()


def call(path: str, thought: str = "I should read it.") -> dict[str, Any]:
    return {
        "content": [
            {"type": "thinking", "thinking": thought},
            {"type": "text", "text": f"Reading {path}."},
            {"type": "tool_use", "name": "read_file", "input": {"path": path}},
        ],
        "stop_reason": "tool_use",
    }


def answer(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def ask(text: str = "Fix the card.") -> list[Any]:
    return [{"role": "user", "content": text}]


async def test_a_plain_answer_round_trips(client: Connect) -> None:
    async with FakeMessagesAPI([answer("Hello there.")]) as api:
        message = await client(api).messages.create(model=MODEL, max_tokens=100, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "Hello there."
        assert message.stop_reason == "end_turn" and message.model == MODEL
        assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
        headers = api.requests[0].headers
        assert headers["authorization"] == "Bearer sk-test" and "anthropic-version" in headers
        api.assert_complete()


async def test_a_stream_carries_every_block_kind_in_the_real_event_order(client: Connect) -> None:
    async with FakeMessagesAPI([call("notes/a.md", "A long thought that needs chunks.")]) as api:
        kinds: list[str] = []
        async with client(api).messages.stream(
            model=MODEL, max_tokens=100, messages=ask(), tools=TOOLS, thinking={"type": "adaptive"}
        ) as stream:
            async for event in stream:
                kinds.append(event.type)
            final = await stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == 3 == kinds.count("content_block_stop")
    assert kinds.count("thinking") > 1 and kinds.count("signature") == 1
    assert kinds.count("input_json") > 1 and kinds.count("text") > 1
    thinking, text, use = final.content
    assert thinking.type == "thinking" and thinking.thinking == "A long thought that needs chunks."
    assert thinking.signature.startswith("sig_")
    assert text.type == "text" and text.text == "Reading notes/a.md."
    assert use.type == "tool_use" and use.input == {"path": "notes/a.md"} and use.id == "toolu_1"
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == api.responses[0]["usage"]["output_tokens"]
    api.assert_complete()


async def test_a_three_round_tool_conversation_is_valid_when_replayed_faithfully(
    client: Connect,
) -> None:
    script = [call("a.txt"), call("b.txt", "Now the other one."), answer("RESULT: done")]
    async with FakeMessagesAPI(script) as api:
        sdk, messages = client(api), ask()
        for _ in range(3):
            message = await sdk.messages.create(
                model=MODEL,
                max_tokens=500,
                messages=messages,
                tools=TOOLS,
                thinking={"type": "adaptive"},
            )
            if message.stop_reason != "tool_use":
                break
            messages.append({"role": "assistant", "content": message.content})
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": f"contents of {b.input}"}
                for b in message.content
                if b.type == "tool_use"
            ]
            messages.append({"role": "user", "content": results})
        assert message.content[0].type == "text" and message.content[0].text == "RESULT: done"
        assert [len(r.body["messages"]) for r in api.requests] == [1, 3, 5]
        api.assert_complete()


def _tool_history(first: dict[str, Any]) -> list[Any]:
    """The history after the fake answered `call(...)` with `first`."""
    return [*ask(), {"role": "assistant", "content": first["content"]}]


def _breakpoints(history: list[Any]) -> dict[str, Any]:
    marked = {"cache_control": {"type": "ephemeral"}}
    tools = [{**TOOLS[0], **marked}, {**TOOLS[0], "name": "other", **marked}]
    system = [
        {"type": "text", "text": "One.", **marked},
        {"type": "text", "text": "Two.", **marked},
    ]
    history[-1]["content"][-1] |= marked
    return {"tools": tools, "system": system}


REJECTIONS: dict[str, Any] = {
    "unpaired tool_use": lambda h, use: {"messages": [*h, *ask("and?")]},
    "tool_result not first": lambda h, use: {
        "messages": [
            *h,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here:"},
                    {"type": "tool_result", "tool_use_id": use, "content": "x"},
                ],
            },
        ]
    },
    "modified thinking": lambda h, use: {
        "messages": [
            h[0],
            {
                "role": "assistant",
                "content": [{**h[1]["content"][0], "thinking": "edited"}, *h[1]["content"][1:]],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use, "content": "x"}],
            },
        ]
    },
    "temperature": lambda h, use: {"messages": ask(), "extra_body": {"temperature": 0.5}},
    "5 breakpoints": lambda h, use: {"messages": _answered(h, use), **_breakpoints(h)},
    "assistant prefill": lambda h, use: {
        "messages": [*ask(), {"role": "assistant", "content": "Sure:"}]
    },
}
EXPECTED = {
    "unpaired tool_use": "without tool_result",
    "tool_result not first": "must come first",
    "modified thinking": "thinking and signature",
    "temperature": "temperature",
    "5 breakpoints": "maximum of 4",
    "assistant prefill": "prefill",
}


def _answered(history: list[Any], use: str) -> list[Any]:
    result = {"type": "tool_result", "tool_use_id": use, "content": "x"}
    return [*history, {"role": "user", "content": [result]}]


@pytest.mark.parametrize("case", list(REJECTIONS))
async def test_invalid_requests_get_400_and_are_recorded(case: str, client: Connect) -> None:
    async with FakeMessagesAPI([call("a.txt"), answer("unused")]) as api:
        sdk = client(api)
        first = await sdk.messages.create(model=MODEL, max_tokens=99, messages=ask(), tools=TOOLS)
        history = _tool_history(first.model_dump(exclude_none=True))
        arguments = {"model": MODEL, "max_tokens": 99, "tools": TOOLS}
        arguments |= REJECTIONS[case](history, first.content[-1].id)  # type: ignore[union-attr]
        with pytest.raises(anthropic.BadRequestError) as raised:
            await sdk.messages.create(**arguments)
        assert EXPECTED[case] in str(raised.value)
        assert len(api.violations) == 1 and EXPECTED[case] in api.violations[0]
        assert api.script.remaining == 1  # a rejected request plays nothing


async def test_the_second_round_reads_what_the_first_round_wrote(client: Connect) -> None:
    system = [{"type": "text", "text": "Rules. " * 200, "cache_control": {"type": "ephemeral"}}]
    script = [call("a.txt"), answer("done"), answer("again")]
    async with FakeMessagesAPI(script, min_cacheable_tokens=100) as api:
        sdk = client(api)
        one = await sdk.messages.create(
            model=MODEL,
            max_tokens=99,
            system=system,
            tools=TOOLS,
            messages=ask(),
            cache_control={"type": "ephemeral"},
        )
        messages = _answered(_tool_history(one.model_dump(exclude_none=True)), "toolu_1")
        two = await sdk.messages.create(
            model=MODEL,
            max_tokens=99,
            system=system,
            tools=TOOLS,
            messages=messages,
            cache_control={"type": "ephemeral"},
        )
        total_one = await sdk.messages.count_tokens(
            model=MODEL, system=system, tools=TOOLS, messages=ask()
        )
        total_two = await sdk.messages.count_tokens(
            model=MODEL, system=system, tools=TOOLS, messages=messages
        )
        uncached = await sdk.messages.create(
            model=MODEL, max_tokens=99, system="Rules. " * 200, tools=TOOLS, messages=messages
        )
    assert total_one.input_tokens > 1400 / 4  # the system prompt alone is 1400 characters
    assert one.usage.cache_read_input_tokens == 0 and one.usage.input_tokens == 0
    assert one.usage.cache_creation_input_tokens == total_one.input_tokens
    assert two.usage.cache_read_input_tokens == total_one.input_tokens
    assert two.usage.cache_creation_input_tokens == total_two.input_tokens - total_one.input_tokens
    assert two.usage.input_tokens == 0
    assert uncached.usage.cache_read_input_tokens == 0
    assert uncached.usage.cache_creation_input_tokens == 0
    assert uncached.usage.input_tokens == total_two.input_tokens


async def test_429_then_success_is_retried_by_the_sdk(client: Connect) -> None:
    faults = {0: Fault.rate_limited(retry_after_ms=20)}
    async with FakeMessagesAPI([answer("after the wait")], faults=faults) as api:
        message = await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "after the wait"
        assert [r.headers["x-stainless-retry-count"] for r in api.requests] == ["0", "1"]
        api.assert_complete()


async def test_overloaded_three_times_raises_overloaded_error(client: Connect) -> None:
    script = [Fault.overloaded(), Fault.overloaded(), Fault.overloaded(), answer("too late")]
    async with FakeMessagesAPI(script) as api:
        with pytest.raises(anthropic.OverloadedError):
            await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert len(api.requests) == 3 and api.violations == []


async def test_should_retry_false_stops_the_sdk_retrying(client: Connect) -> None:
    async with FakeMessagesAPI([Fault.server_error(should_retry=False), answer("x")]) as api:
        with pytest.raises(anthropic.InternalServerError):
            await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert len(api.requests) == 1


async def test_an_error_event_mid_stream_is_not_retried(client: Connect) -> None:
    script = [Fault.stream_error(after_events=4, response=answer("A fairly long answer."))]
    async with FakeMessagesAPI(script) as api:
        seen: list[str] = []
        with pytest.raises(anthropic.APIStatusError) as raised:
            async with client(api).messages.stream(
                model=MODEL, max_tokens=9, messages=ask()
            ) as stream:
                async for event in stream:
                    seen.append(event.type)
        assert "Overloaded" in str(raised.value) and "text" in seen
        assert len(api.requests) == 1 and api.violations == []


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_dropped_connection_is_a_connection_error(streaming: bool, client: Connect) -> None:
    async with FakeMessagesAPI([Fault.drop_connection(after_bytes=120)]) as api:
        sdk = client(api, max_retries=0)
        # mid-stream an SDK before 2.17 lets the transport's error through instead of
        # APIConnectionError (2.17 wraps it): either way the model adapter retries it
        mid_stream = (anthropic.APIConnectionError, httpx2.RemoteProtocolError)
        with pytest.raises(mid_stream if streaming else anthropic.APIConnectionError) as raised:
            if streaming:
                async with sdk.messages.stream(model=MODEL, max_tokens=9, messages=ask()) as s:
                    await s.get_final_message()
            else:
                await sdk.messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert retryable(raised.value)


async def test_the_sdk_retries_a_dropped_connection(client: Connect) -> None:
    faults = {0: Fault.drop_connection(after_bytes=10)}
    async with FakeMessagesAPI([answer("second try")], faults=faults) as api:
        message = await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "second try"
        assert len(api.requests) == 2


async def test_a_hang_ends_in_a_client_timeout(client: Connect) -> None:
    async with FakeMessagesAPI([Fault.hang()]) as api:
        sdk = client(api, max_retries=0, timeout=0.3)
        with pytest.raises(anthropic.APITimeoutError):
            await sdk.messages.create(model=MODEL, max_tokens=9, messages=ask())


async def test_a_stream_that_stalls_ends_in_a_read_timeout(client: Connect) -> None:
    async with FakeMessagesAPI([Fault.hang(after_events=3)]) as api:
        sdk = client(api, max_retries=0, timeout=0.3)
        # mid-stream an SDK before 2.17 lets the transport's timeout through instead of
        # APITimeoutError (2.17 wraps it): either way the model adapter retries it
        with pytest.raises((anthropic.APITimeoutError, httpx2.ReadTimeout)) as raised:
            async with sdk.messages.stream(model=MODEL, max_tokens=9, messages=ask()) as stream:
                await stream.get_final_message()
        assert retryable(raised.value)


async def test_a_script_entry_no_model_could_send_is_a_violation(client: Connect) -> None:
    async with FakeMessagesAPI([{"content": [{"type": "image"}]}]) as api:
        with pytest.raises(anthropic.InternalServerError, match="bad script entry"):
            await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert len(api.requests) == 1 and "image" in api.violations[0]


async def test_a_delay_still_answers(client: Connect) -> None:
    async with FakeMessagesAPI([Fault.delay(0.05, then=answer("late"))]) as api:
        message = await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "late"


async def test_an_exhausted_script_is_a_violation_and_not_retried(client: Connect) -> None:
    async with FakeMessagesAPI([]) as api:
        with pytest.raises(anthropic.InternalServerError, match="script exhausted"):
            await client(api).messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert len(api.requests) == 1 and "script exhausted" in api.violations[0]
        with pytest.raises(AssertionError):
            api.assert_clean()


async def test_a_responder_function_sees_each_request_and_its_index(client: Connect) -> None:
    async def respond(body: dict[str, Any], index: int) -> dict[str, Any]:
        return answer(f"call {index}: {body['messages'][-1]['content']}")

    async with FakeMessagesAPI(respond) as api:
        sdk = client(api)
        for n in range(2):
            message = await sdk.messages.create(model=MODEL, max_tokens=9, messages=ask(f"q{n}"))
            assert (
                message.content[0].type == "text" and message.content[0].text == f"call {n}: q{n}"
            )


async def test_requests_without_credentials_or_version_are_refused() -> None:
    from aiohttp import ClientSession

    body = {"model": MODEL, "max_tokens": 9, "messages": ask()}
    async with FakeMessagesAPI([answer("x")]) as api, ClientSession() as http:
        url = api.base_url + "/v1/messages"
        async with http.post(url, json=body, headers={"anthropic-version": "1"}) as r:
            assert r.status == 401
        async with http.post(url, json=body, headers={"x-api-key": "k"}) as r:
            assert r.status == 400 and "anthropic-version" in (await r.json())["error"]["message"]
        async with http.post(
            url, json=body, headers={"x-api-key": "k", "anthropic-version": "1"}
        ) as r:
            assert r.status == 200
        async with http.post(api.base_url + "/v1/complete", json=body) as r:
            assert r.status == 404
        assert len(api.violations) == 3


def test_the_thread_variant_serves_synchronous_callers() -> None:
    with FakeMessagesAPI([answer("from a thread")]) as api:
        sdk = anthropic.Anthropic(api_key="sk-test", base_url=api.base_url)
        message = sdk.messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "from a thread"
    api.assert_complete()


async def _ready_line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    async with asyncio.timeout(30):
        line = await process.stdout.readline()
    assert line.startswith(b"READY "), line
    return line.decode().split()[1]


async def test_the_cli_serves_a_transcript_to_another_process(
    tmp_path: Path, client: Connect
) -> None:
    transcript = tmp_path / "t.json"
    transcript.write_text(
        json.dumps(
            {
                "responses": [
                    answer("from the CLI"),
                    {"fault": {"kind": "http_error", "status": 529}},
                ]
            }
        )
    )
    violations = tmp_path / "violations.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cardrunner.testing.fake_api_cli",
        "--port",
        "0",
        "--transcript",
        str(transcript),
        "--requests-file",
        str(tmp_path / "requests.jsonl"),
        "--violations-file",
        str(violations),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        base_url = await _ready_line(process)
        sdk = client(base_url, max_retries=0)
        message = await sdk.messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert message.content[0].type == "text" and message.content[0].text == "from the CLI"
        assert json.loads(violations.read_text()) == []
        with pytest.raises(anthropic.OverloadedError):
            await sdk.messages.create(model=MODEL, max_tokens=9, messages=ask())
        assert json.loads(violations.read_text()) == []
        with pytest.raises(anthropic.BadRequestError):
            await sdk.messages.create(
                model=MODEL, max_tokens=9, messages=ask(), extra_body={"temperature": 1}
            )
        assert "temperature" in json.loads(violations.read_text())[0]
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            code = await process.wait()
    assert code == 1  # a violation was recorded
    lines = (tmp_path / "requests.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in lines] == [0, 1, 2]
    assert json.loads(lines[2])["body"]["temperature"] == 1
