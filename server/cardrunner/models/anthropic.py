"""The production model: the Anthropic Messages API through the official `anthropic` SDK.

The SDK reads `ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` and `ANTHROPIC_BASE_URL` itself, so any
Messages-API-compatible endpoint works unchanged. Requests stream (long answers would hit the SDK's
non-streaming limit). Retries are ours rather than the SDK's (`retries.py`): a server-given delay
is honoured within the wall budget, a spend limit is named instead of retried, and a stream that
breaks half-way is retried too; when they are spent the run ends `api_error`.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from typing import Any

from cardrunner.agent.events import Usage
from cardrunner.agent.model import ModelError, ModelRequest, ModelResponse
from cardrunner.config.secrets import redact
from cardrunner.config.settings import ModelOptions
from cardrunner.models.body import build_body, request_headers
from cardrunner.models.retries import GiveUp, decide


class AnthropicModel:
    """`Model` port on `anthropic.AsyncAnthropic`."""

    def __init__(self, model: str, options: ModelOptions, client: Any | None = None) -> None:
        self._model = model
        self._options = options
        self._client = client

    @property
    def name(self) -> str:
        return self._model

    def _sdk(self) -> Any:
        if self._client is None:
            import anthropic  # lazy: ~2 s of import the language server must not pay at start

            self._client = anthropic.AsyncAnthropic(
                max_retries=0, timeout=self._options.request_timeout_seconds
            )
        return self._client

    async def respond(self, request: ModelRequest) -> ModelResponse:
        body = build_body(request, self._model)
        headers = request_headers(request)
        deadline = None if request.time_left is None else time.monotonic() + request.time_left
        attempt = 0
        while True:
            try:
                return await self._stream(body, headers)
            except Exception as exc:
                left = None if deadline is None else deadline - time.monotonic()
                decision = decide(
                    exc,
                    attempt,
                    retryable=retryable(exc),
                    max_retries=self._options.max_retries,
                    max_backoff=self._options.retry_max_delay_seconds,
                    time_left=left,
                )
                if isinstance(decision, GiveUp):
                    raise ModelError(_describe(exc, decision.why)) from exc
                attempt += 1
                await asyncio.sleep(decision.seconds)

    async def _stream(self, body: dict[str, Any], headers: dict[str, str]) -> ModelResponse:
        extra = {"extra_headers": headers} if headers else {}
        async with self._sdk().messages.stream(**body, **extra) as stream:
            message = await stream.get_final_message()
        usage = message.usage
        return ModelResponse(
            content=[b.model_dump(mode="json", exclude_none=True) for b in message.content],
            stop_reason=message.stop_reason,
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            ),
            model=message.model,
            id=message.id,
            body=body,
            transformations=_transformations(message),
        )


def _transformations(message: Any) -> list[dict[str, Any]]:
    """The answer's `input_transformations` (the SDK keeps fields it has no type for as extras)."""
    found = (getattr(message, "model_extra", None) or {}).get("input_transformations")
    return [dict(t) for t in found if isinstance(t, dict)] if isinstance(found, list) else []


PRELOAD = ("anthropic", "anthropic.lib.streaming", "anyio._backends._asyncio")
"""The SDK, what `messages.stream` loads, and the HTTP layer's event-loop backend (loaded at
its first use)."""


def preload() -> None:
    """Import what the first request imports (the SDK, its streaming and its HTTP layer), so a
    spare worker (`workers/spare.py`) has paid for it before its run is asked for. Nothing reads
    the environment here: the client is built at the first request, from the run's."""
    for name in PRELOAD:
        importlib.import_module(name)
    import anthropic

    _transport_errors()
    # A client built and dropped unused loads its HTTP transport and TLS context; the run's
    # own client is built at its first request, from the run's environment.
    anthropic.AsyncAnthropic(api_key="unused", base_url="http://127.0.0.1:9")


def retryable(exc: Exception) -> bool:
    """A status or transport failure that another attempt may not meet."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        # 200 here means an `error` event arrived in the middle of a stream.
        return status in (200, 408, 409, 429) or status >= 500
    return isinstance(exc, (anthropic.APIConnectionError, *_transport_errors()))


def _transport_errors() -> tuple[type[Exception], ...]:
    """Errors of the HTTP layer an SDK before 2.17 lets through unwrapped once a stream has
    begun (2.17 wraps them in `APIConnectionError`; `pyproject.toml` allows both)."""
    try:
        import httpx2

        return (httpx2.TransportError,)
    except ImportError:  # an SDK on plain httpx wraps these itself
        return ()


def _describe(exc: Exception, why: str | None = None) -> str:
    status = getattr(exc, "status_code", None)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"
    if why:
        text = f"{why} — {text}"
    return str(redact(text))[:500]
