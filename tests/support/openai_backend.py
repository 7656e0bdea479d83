"""A scripted OpenAI-compatible model: `/v1/chat/completions`, plain and streamed.

What a gateway such as LiteLLM's proxy translates Anthropic Messages requests into. It plays
Anthropic-shaped steps (the same transcripts the strict fake plays: text and tool_use blocks,
thinking left out — chat completions have none) as OpenAI answers, and reports as usage what it
processed: `prompt_tokens` is its own count of each request (characters of the request's
messages and tools / 4), summed in `processed`, so a test can hold a run's cost to it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

PROBE = "You are a probe"


class OpenAIBackend:
    """`async with OpenAIBackend(steps) as backend:`; `backend.base_url` ends in `/v1`."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.prompt_tokens: list[int] = []
        self.completion_tokens: list[int] = []
        self.base_url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> OpenAIBackend:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def run_requests(self) -> list[int]:
        """Indices of the requests that were the run's own (not the endpoint probe's)."""
        return [i for i, body in enumerate(self.requests) if PROBE not in json.dumps(body)]

    def _step(self, body: dict[str, Any]) -> dict[str, Any]:
        if PROBE not in json.dumps(body["messages"][:1]):  # the system prompt comes first
            return self.steps.pop(0)
        last = body["messages"][-1]
        if last.get("role") == "tool":
            return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
        if body.get("tools"):
            call = {"type": "tool_use", "id": "call_probe", "name": "echo", "input": {"text": "ok"}}
            return {"content": [call], "stop_reason": "tool_use"}
        return {"content": [{"type": "text", "text": "white"}], "stop_reason": "end_turn"}

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        message, finish = _message(self._step(body), len(self.requests))
        prompt = math.ceil(len(json.dumps([body["messages"], body.get("tools")])) / 4)
        completion = math.ceil(len(json.dumps(message)) / 4)
        self.prompt_tokens.append(prompt)
        self.completion_tokens.append(completion)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return web.json_response(_answer(body, [choice], usage))
        return await _stream(request, body, message, finish, usage)


def _message(step: dict[str, Any], n: int) -> tuple[dict[str, Any], str]:
    text = "\n".join(b["text"] for b in step["content"] if b["type"] == "text")
    calls = [
        {
            "id": b.get("id") or f"call_{n}_{i}",
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))},
        }
        for i, b in enumerate(step["content"])
        if b["type"] == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message, "tool_calls" if calls else "stop"


def _answer(body: dict[str, Any], choices: list[Any], usage: Any) -> dict[str, Any]:
    kind = "chat.completion.chunk" if body.get("stream") else "chat.completion"
    answer = {"id": "chatcmpl-1", "object": kind, "created": 1, "model": body["model"]}
    return {**answer, "choices": choices, "usage": usage}


async def _stream(
    request: web.Request,
    body: dict[str, Any],
    message: dict[str, Any],
    finish: str,
    usage: dict[str, int],
) -> web.StreamResponse:
    """The answer as chunks: the text, each call's name then its arguments, the finish, and the
    usage in a last chunk without choices (as OpenAI sends it under `include_usage`)."""
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": message["content"] or ""}]
    for i, call in enumerate(message.get("tool_calls", [])):
        head = {"index": i, "id": call["id"], "type": "function"}
        deltas.append({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
        args = {"arguments": call["function"]["arguments"]}
        deltas.append({"tool_calls": [{"index": i, "function": args}]})
    chunks = [
        _answer(body, [{"index": 0, "delta": d, "finish_reason": None}], None) for d in deltas
    ]
    chunks.append(_answer(body, [{"index": 0, "delta": {}, "finish_reason": finish}], None))
    chunks.append(_answer(body, [], usage))
    for chunk in chunks:
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response
