"""The production model: the Anthropic Messages API through the official `anthropic` SDK, retried.

The SDK reads `ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` and `ANTHROPIC_BASE_URL` itself, so any
Messages-API-compatible endpoint works unchanged; `[endpoint] provider` picks the SDK's own
Bedrock or Vertex client instead, which read their credentials where the platform keeps them.
What an endpoint takes (thinking, images, the window) shapes each body (models/shaping.py), and
its failures are said in cardrunner's words with the endpoint's text kept whole. Requests stream (long answers would hit the SDK's
non-streaming limit). Retries are ours rather than the SDK's: a server-given delay is honoured
within the wall budget, a spend limit is named instead of retried, and a stream that breaks
half-way is retried too; when they are spent the run ends `api_error`.

When to retry a failed call, and how long to wait first:

- A 429 that names a delay (`retry-after-ms` / `retry-after`) is waited out as the API
  asks — a fixed cap ended runs under sustained rate limiting — but never past what is left of
  the run's wall budget, and up to `RATE_LIMIT_RETRIES` times.
- A 429 that reports a spend, usage or quota limit will not clear by waiting: no retry, and the
  failure says so.
- 529 overloaded, 5xx, 408/409, a broken stream and connection errors back off exponentially
  with full jitter, up to `max_retries` times, each wait capped at `retry_max_delay_seconds`.
- Anything else (400, 401, 403, 404 …) is the request's fault and is never retried.
"""

from __future__ import annotations

import asyncio
import importlib
import random
import re
import time
from dataclasses import dataclass
from typing import Any

from cardrunner.agent.events import Usage
from cardrunner.agent.model import ModelError, ModelRequest, ModelResponse, WindowExceeded
from cardrunner.apirules.request import build_body, request_headers
from cardrunner.config.model_table import ModelSpec, model_spec
from cardrunner.config.secrets import redact
from cardrunner.config.settings import EndpointSettings, ModelOptions
from cardrunner.models.shaping import explain, fit, honest, shape, window_signal

RATE_LIMIT_RETRIES = 10
SPEND_CODES = frozenset({"enforced_spend_limit_reached", "billing_error", "insufficient_quota"})
SPEND_WORDS = re.compile(r"spend limit|usage limit|quota|credit balance|billing", re.IGNORECASE)


@dataclass(frozen=True)
class Retry:
    """Wait `seconds`, then try again."""

    seconds: float


@dataclass(frozen=True)
class GiveUp:
    """Do not retry; `why` is added to the failure (None: the error says enough)."""

    why: str | None = None


def spend_limit(exc: Any) -> str | None:
    """The API's words when `exc` is a 429 for a spend or quota limit (None otherwise)."""
    if getattr(exc, "status_code", None) != 429:
        return None
    body = getattr(exc, "body", None)
    found = body.get("error", body) if isinstance(body, dict) else None
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    raw = error.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    message = str(error.get("message") or getattr(exc, "message", "") or "")
    if str(details.get("error_code")) in SPEND_CODES or SPEND_WORDS.search(message):
        return message or "spend or quota limit reached"
    return None


def server_delay(headers: Any) -> float | None:
    """Seconds the server asks to wait (`retry-after-ms`, then `retry-after`), if it says."""
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue
    return None


def decide(
    exc: Exception,
    attempt: int,
    *,
    retryable: bool,
    max_retries: int,
    max_backoff: float,
    time_left: float | None,
) -> Retry | GiveUp:
    """What to do after the `attempt`-th failure (0-based); `retryable` is the SDK-level verdict
    (a retryable status or a transport error)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    if (limit := spend_limit(exc)) is not None:
        return GiveUp(f"the API's spend or quota limit is reached ({limit}); waiting will not help")
    if not retryable or headers.get("x-should-retry") == "false":
        return GiveUp()
    asked = server_delay(headers) if getattr(exc, "status_code", None) == 429 else None
    if asked is not None:
        if attempt >= max(max_retries, RATE_LIMIT_RETRIES):
            return GiveUp(f"still rate limited after {attempt} waits")
        if time_left is not None and asked > time_left:
            return GiveUp(
                f"rate limited: the API asks to wait {asked:.0f} s, more than the "
                f"{max(0.0, time_left):.0f} s left of the wall budget"
            )
        return Retry(asked)
    if attempt >= max_retries:
        return GiveUp()
    wait = min(max_backoff, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)
    if time_left is not None and wait > time_left:
        return GiveUp("no time left in the wall budget to retry")
    return Retry(wait)


def sdk_client(endpoint: EndpointSettings, timeout: float) -> Any:
    """The SDK's client for `endpoint`: `AsyncAnthropic`, or its own Bedrock or Vertex client
    (their extras, `cardrunner[bedrock]` / `cardrunner[vertex]`, bring boto3 or google-auth)."""
    import anthropic  # lazy: ~2 s of import the language server must not pay at start

    common: dict[str, Any] = {"max_retries": 0, "timeout": timeout}
    if endpoint.base_url:
        common["base_url"] = endpoint.base_url
    if endpoint.provider == "bedrock":
        return anthropic.AsyncAnthropicBedrock(aws_region=endpoint.region, **common)
    if endpoint.provider == "vertex":  # None: the SDK's CLOUD_ML_REGION, project from env/ADC
        given: dict[str, Any] = {"region": endpoint.region, "project_id": endpoint.project}
        return anthropic.AsyncAnthropicVertex(
            **common, **{k: v for k, v in given.items() if v is not None}
        )
    return anthropic.AsyncAnthropic(**common)


class AnthropicModel:
    """`Model` port on the `anthropic` SDK's client for the configured endpoint.

    `spec` is the model's entry (the table, `[models.NAME]` and the endpoint's profile): it
    decides whether thinking and images are sent and the window `max_tokens` is fitted into.
    `where` names the endpoint in messages."""

    def __init__(
        self,
        model: str,
        options: ModelOptions,
        client: Any | None = None,
        *,
        spec: ModelSpec | None = None,
        endpoint: EndpointSettings | None = None,
        where: str = "https://api.anthropic.com",
    ) -> None:
        self._model = model
        self._options = options
        self._client = client
        self._spec = spec or model_spec(model)
        self._endpoint = endpoint or EndpointSettings()
        self._where = where
        self._unsigned = False
        """Thinking came back without a signature (a gateway dropped it): nothing could check
        it if it were sent back, so from then on no thinking is asked for or sent back."""

    @property
    def name(self) -> str:
        return self._model

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = sdk_client(self._endpoint, self._options.request_timeout_seconds)
        return self._client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The body this endpoint is sent for `request`; WindowExceeded when it cannot fit."""
        spec = self._spec
        body = build_body(request, self._model)
        thinking = spec.thinking != "none" and not self._unsigned
        body = shape(body, thinking=thinking, images=spec.images)
        window = self._options.context_window or spec.context_window
        setting = f"[models.{self._model}] context_window"
        return fit(body, window, self._model, setting)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        body = self.body(request)
        headers = request_headers(request) if "thinking" in body else {}
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
                    raise self._failure(exc, decision.why) from exc
                attempt += 1
                await asyncio.sleep(decision.seconds)

    async def _stream(self, body: dict[str, Any], headers: dict[str, str]) -> ModelResponse:
        extra = {"extra_headers": headers} if headers else {}
        async with self._sdk().messages.stream(**body, **extra) as stream:
            message = await stream.get_final_message()
        usage = message.usage
        content = [b.model_dump(mode="json", exclude_none=True) for b in message.content]
        self._unsigned = self._unsigned or any(
            b.get("type") == "thinking" and not b.get("signature") for b in content
        )
        return ModelResponse(
            content=content,
            stop_reason=message.stop_reason,
            usage=honest(
                Usage(
                    input_tokens=usage.input_tokens or 0,
                    output_tokens=usage.output_tokens or 0,
                    cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                    cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                ),
                body,
                content,
            ),
            model=message.model,
            id=message.id,
            body=body,
            transformations=_transformations(message),
        )

    def _failure(self, exc: Exception, why: str | None) -> ModelError:
        """The failure in cardrunner's words where the endpoint's abilities explain it; the
        endpoint's own text goes whole into `said` (the log)."""
        status = getattr(exc, "status_code", None)
        said = str(redact(f"{type(exc).__name__}: {exc}"))
        where = str(getattr(self._client, "base_url", "") or self._where).rstrip("/")
        if window_signal(status, str(exc)):
            window = self._options.context_window or self._spec.context_window
            return WindowExceeded(
                f"the endpoint {where} says the conversation exceeds the context window of "
                f"{self._model} (cardrunner counts it as {window:,}); set [models.{self._model}] "
                "context_window to the window the endpoint serves",
                window=window,
                said=said,
            )
        words = explain(status, str(exc), self._model, where)
        if words is None:
            return ModelError(_describe(exc, why), said)
        return ModelError(f"{words} — the endpoint said: {said[:300]}", said)


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
