"""When to retry a failed Messages API call, and how long to wait first.

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

import random
import re
from dataclasses import dataclass
from typing import Any

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
