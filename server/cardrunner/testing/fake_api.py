"""A local fake of the Anthropic Messages API, strict enough to stand in for the real one.

Tests, benchmarks and the VS Code end-to-end test point the real `anthropic` SDK at it
(`base_url`), so the SDK's retries, streaming parser and error types are exercised for real. Every
request is validated as the API would (`cardrunner.apirules.validation`); a bad one is answered 400
*and* recorded in `violations`, so a test can assert that the client never sent one. Answers come
from a script (`fake_script`), usage from a prompt-cache simulation (`fake_cache`), streams from
`fake_sse`. Run `python -m cardrunner.testing.fake_api_cli --transcript F.json` to serve a transcript
to another process; it prints `READY <base_url>` once listening.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cardrunner.apirules.binding import SignatureBinder
from cardrunner.apirules.conversation import ConversationChecker
from cardrunner.apirules.promptcache import PromptCache, estimate_tokens
from cardrunner.apirules.validation import validate_request
from cardrunner.testing.fake_replies import error_reply, send_json, send_stream, wait_closing
from cardrunner.testing.fake_script import (
    FILLER,
    Fault,
    Responder,
    Response,
    ResponseBuilder,
    Script,
)

if TYPE_CHECKING:
    from aiohttp import web


@dataclass(frozen=True)
class Endpoint:
    """How an endpoint other than the API takes requests, as its documentation says it does:
    a window it refuses longer prompts over (and may tell at `told`, a path and its JSON),
    images, thinking (`signed`; `dropped`: a gateway strips the signatures of what it returns;
    `refused`: a 400 on the field; `ignored`: no thinking comes back), the usage it reports
    (`reported`; `missing`: zeros; `substituted`: a gateway's guess of a sixth) and cache."""

    window: int | None = None
    told: tuple[str, dict[str, Any]] | None = None
    images: bool = True
    thinking: str = "signed"
    usage: str = "reported"
    cache: bool = True
    count_tokens: bool = True

    def refusal(self, body: dict[str, Any], prompt: int) -> str | None:
        """The endpoint's own words for refusing `body` (None: it takes it)."""
        if self.window is not None and prompt + int(body.get("max_tokens", 0)) > self.window:
            return (
                f"the request exceeds the available context size ({prompt} prompt tokens and "
                f"max_tokens {body.get('max_tokens')} > n_ctx {self.window})"
            )
        if not self.images and '"type": "image"' in json.dumps(body.get("messages")):
            return "unknown variant `image`, expected `text` at line 1 column 4012"
        if self.thinking == "refused" and "thinking" in body:
            return "unknown field `thinking`, expected one of `model`, `messages`, `max_tokens`"
        return None

    def alter(self, message: dict[str, Any]) -> dict[str, Any]:
        """The answer as this endpoint hands it on."""
        if self.thinking in ("dropped", "ignored"):
            keep = self.thinking == "dropped"
            message["content"] = [
                {k: v for k, v in b.items() if k != "signature"} if b["type"] == "thinking" else b
                for b in message["content"]
                if keep or b["type"] != "thinking"
            ]
        usage = message["usage"]
        if not self.cache:
            usage["input_tokens"] += usage.pop("cache_read_input_tokens", 0)
            usage["input_tokens"] += usage.pop("cache_creation_input_tokens", 0)
        if self.usage == "missing":
            message["usage"] = {"input_tokens": 0, "output_tokens": 0}
        elif self.usage == "substituted":
            usage["input_tokens"] //= 6
        return message


ANTHROPIC = Endpoint()
OLLAMA = Endpoint(
    window=4096,
    told=("/api/show", {"model_info": {"qwen3.context_length": 40960}, "parameters": ""}),
    thinking="ignored",
    cache=False,
    count_tokens=False,
)
"""Ollama's `/v1/messages`: its default 4,096-token context, told by `/api/show`."""
DEEPSEEK = Endpoint(images=False, thinking="refused", cache=False, count_tokens=False)
"""DeepSeek's Anthropic API: no images (`unknown variant image`), no window told."""
SIGNATURE_DROPPING = Endpoint(thinking="dropped")
"""A gateway that passes thinking on without its signatures."""
SMALL_WINDOW = Endpoint(window=2048, told=("/props", {"n_ctx": 2048}))
"""llama.cpp's server with `-c 2048`, told by `/props`."""
MISSING_USAGE = Endpoint(usage="missing")


@dataclass
class RecordedRequest:
    """One HTTP request as received: `index` counts `/v1/messages` calls (None for others)."""

    path: str
    headers: dict[str, str]
    body: Any
    index: int | None


class FakeMessagesAPI:
    """`async with FakeMessagesAPI(responder) as api:` (or `with` for a server on its own thread).

    `responder`: a list of responses/faults played in order, or `f(body, index) -> Response |
    Fault` (may be async). `faults` maps a `/v1/messages` call index to a fault applied *instead
    of* consulting the script. `check_history=False` skips the check that assistant turns are the
    ones this server returned (for tests that build histories by hand). The prefix check on
    thinking signatures (`apirules/binding.py`) is always on for the preserved-thinking models, as it is
    on the real API; `binder` shares a signing key between servers (the default key already is).
    """

    def __init__(
        self,
        responder: Responder = (),
        *,
        faults: Mapping[int, Fault] | None = None,
        min_cacheable_tokens: int = 512,
        api_key: str | None = None,
        check_history: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        on_record: Callable[[FakeMessagesAPI], None] | None = None,
        binder: SignatureBinder | None = None,
        endpoint: Endpoint = ANTHROPIC,
    ) -> None:
        self.endpoint = endpoint
        self.script = Script(responder)
        self.faults = dict(faults or {})
        self.cache = PromptCache(min_cacheable_tokens)
        self.checker = ConversationChecker()
        self.binder = binder or SignatureBinder()
        self.transformations: list[list[dict[str, str]]] = []
        """`input_transformations` of every answered request (drop_block), in order."""
        self._dropped: dict[int, list[dict[str, str]]] = {}
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.responses: list[dict[str, Any]] = []
        self.base_url = ""
        self._api_key, self._check_history = api_key, check_history
        self._host, self._port, self._on_record = host, port, on_record
        self._builder = ResponseBuilder(self.binder)
        self._calls = 0
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Listen on `host:port` (0: a free port); returns `base_url`."""
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        if self.endpoint.count_tokens:
            app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        if self.endpoint.told is not None:
            app.router.add_route("*", self.endpoint.told[0], self._told)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._closing = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://{self._host}:{port}"
        return self.base_url

    async def stop(self) -> None:
        """Release hanging answers and close the server."""
        if self._closing is not None:
            self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeMessagesAPI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def run_in_thread(self, timeout: float = 10.0) -> str:
        """Serve from a background thread with its own event loop; returns `base_url`."""
        started = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=main, name="fake-messages-api", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            raise TimeoutError("the fake Messages API did not start in time")
        if failure:
            raise failure[0]
        return self.base_url

    def stop_thread(self, timeout: float = 10.0) -> None:
        """Stop the server started by `run_in_thread`."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._thread = self._loop = None

    def __enter__(self) -> FakeMessagesAPI:
        self.run_in_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_thread()

    # -- assertions -------------------------------------------------------------------------

    def assert_clean(self) -> None:
        """Fail with every violation recorded so far."""
        if self.violations:
            raise AssertionError("fake Messages API violations:\n" + "\n".join(self.violations))

    def assert_complete(self) -> None:
        """Fail on violations, or when scripted responses were left unplayed."""
        self.assert_clean()
        if self.script.remaining:
            raise AssertionError(f"{self.script.remaining} scripted responses were never requested")

    # -- handlers ---------------------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        index = self._calls
        self._calls += 1
        try:
            body, rejection = await self._admit(request, index, count_tokens=False)
            if rejection is not None:
                return rejection
            if said := self.endpoint.refusal(body, self.cache.count(body)):
                return self._reject(request, index, 400, "invalid_request_error", said)
            return await self._answer(request, body, index, self.faults.get(index))
        except ValueError as exc:  # a script entry the real API could never have sent
            return self._reject(request, index, 500, "api_error", f"bad script entry: {exc}")
        finally:
            self._notify()

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        body, rejection = await self._admit(request, None, count_tokens=True)
        self._notify()
        if rejection is not None:
            return rejection
        return web.json_response({"input_tokens": self.cache.count(body)})

    async def _told(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        assert self.endpoint.told is not None
        return web.json_response(self.endpoint.told[1])

    async def _unknown(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(RecordedRequest(request.path, _headers(request), None, None))
        message = f"{request.method} {request.path}: no such endpoint"
        response = self._reject(request, None, 404, "not_found_error", message)
        self._notify()
        return response

    async def _admit(
        self, request: web.Request, index: int | None, *, count_tokens: bool
    ) -> tuple[dict[str, Any], web.StreamResponse | None]:
        """Record the request; a rejection if the real API would refuse it."""
        try:
            body = await request.json()
        except ValueError:
            body = None
        headers = _headers(request)
        self.requests.append(RecordedRequest(request.path, headers, body, index))
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if not key.strip() or (self._api_key is not None and key != self._api_key):
            message = "invalid x-api-key" if key.strip() else "missing API key"
            return {}, self._reject(request, index, 401, "authentication_error", message)
        problems = [] if "anthropic-version" in headers else ["anthropic-version: header required"]
        problems += validate_request(body, count_tokens=count_tokens)
        if not problems and self._check_history and not count_tokens:
            problems = self.checker.check(body)
        if problems:
            message = "; ".join(problems)
            return {}, self._reject(request, index, 400, "invalid_request_error", message)
        assert isinstance(body, dict)
        outcome = self.binder.check(body, headers)
        if outcome.errors:
            message = "; ".join(outcome.errors)
            return {}, self._reject(request, index, 400, "invalid_request_error", message)
        if outcome.transformations and index is not None:
            self._dropped[index] = outcome.transformations
        return body, None

    def _reject(
        self, request: web.Request, index: int | None, status: int, kind: str, message: str
    ) -> web.Response:
        """Answer an error the client caused (or the script did) and record it as a violation."""
        self.violations.append(f"{request.path} call {index}: {message}")
        return error_reply(status, kind, message, {"x-should-retry": "false"})

    async def _answer(
        self, request: web.Request, body: dict[str, Any], index: int, step: Response | Fault | None
    ) -> web.StreamResponse:
        assert self._closing is not None
        if step is None:
            step = await self.script.next(body, index)
        if step is None:
            problem = f"script exhausted: call {index} has no scripted response"
            return self._reject(request, index, 500, "api_error", problem)
        fault = step if isinstance(step, Fault) else None
        if fault is not None and fault.kind == "http_error":
            return error_reply(
                fault.status, fault.error_type, fault.message, fault.headers, fault.details
            )
        if fault is not None and fault.kind == "delay":
            await wait_closing(self._closing, fault.seconds)
            return await self._answer(request, body, index, fault.response)
        response = step if fault is None else (fault.response or FILLER)
        assert isinstance(response, dict)
        transformations = self._dropped.pop(index, None)
        message = self._message(body, index, response)
        if transformations:
            message["input_transformations"] = transformations
        if fault is None:
            self.transformations.append(transformations or [])
            self.checker.record(body, message["content"])
            self.responses.append(message)
        send = send_stream if body.get("stream") else send_json
        return await send(request, message, fault, self._closing)

    def _message(self, body: dict[str, Any], index: int, response: Response) -> dict[str, Any]:
        content = self._builder.content(_with_edits(response, body), body)
        usage = self.cache.measure(body).as_usage(estimate_tokens(content))
        usage.update(response.get("usage") or {})
        return self.endpoint.alter(
            {
                "id": f"msg_fake_{index:04d}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": self._builder.stop_reason(response, content),
                "stop_sequence": None,
                "usage": usage,
            }
        )

    def _notify(self) -> None:
        if self._on_record is not None:
            self._on_record(self)


def _with_edits(response: Response, body: dict[str, Any]) -> Response:
    """Scripted `write_file` edits become whole contents, as `ScriptedModel` makes them."""
    from cardrunner.models.scripted import EditError, apply_edit

    blocks = []
    for block in response.get("content", []):
        args = block.get("input") if block.get("type") == "tool_use" else None
        if isinstance(args, dict) and "edit" in args:
            args = dict(args)
            try:
                args["content"] = apply_edit(body["messages"], args["path"], args.pop("edit"))
            except EditError as exc:
                raise ValueError(f"scripted edit impossible: {exc}") from exc
            block = {**block, "input": args}
        blocks.append(block)
    return {**response, "content": blocks}


def _headers(request: web.Request) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}
