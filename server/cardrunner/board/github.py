"""GitHub's REST API, just enough to read issues: the token, pagination and rate limits.

Issues are where much work already is; `cardrunner import github` turns them into cards. This
talks to the REST API with the standard library (no SDK to install for one GET), at
`GITHUB_API_URL` (GitHub Enterprise, or a test's fake) or api.github.com. Pages are followed
through the `Link` header. A rate-limit answer (403 or 429 with `Retry-After`, or
`x-ratelimit-remaining: 0` and `x-ratelimit-reset`) is waited out when the wait is short, and
otherwise fails with the time it would take, so a CI job never hangs on it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from typing import Any
from urllib.parse import urlencode

DEFAULT_API = "https://api.github.com"
MAX_WAIT_SECONDS = 60.0
"""The longest rate-limit wait taken; a longer one is an error that says how long."""
MAX_PAGES = 100
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class GitHubError(Exception):
    """The API refused or failed; str() says what to do about it."""


def find_token() -> str | None:
    """`GITHUB_TOKEN`, `GH_TOKEN`, else what `gh auth token` prints (None without any)."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if os.environ.get(name):
            return os.environ[name].strip()
    gh = shutil.which("gh")
    if gh is None:
        return None
    try:
        done = subprocess.run([gh, "auth", "token"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


@dataclass
class GitHub:
    """A REST client for one API root."""

    api: str = field(default_factory=lambda: os.environ.get("GITHUB_API_URL") or DEFAULT_API)
    token: str | None = None
    max_wait: float = MAX_WAIT_SECONDS
    sleep: Callable[[float], None] = time.sleep
    waited: list[float] = field(default_factory=list)
    """Every rate-limit wait taken, in seconds (what the CLI reports)."""

    def get_all(self, path: str, params: dict[str, str] | None = None) -> list[Any]:
        """Every item of a listing, following `Link: <…>; rel="next"` pages."""
        url: str | None = f"{self.api.rstrip('/')}{path}"
        if params:
            url = f"{url}?{urlencode(params)}"
        items: list[Any] = []
        for _ in range(MAX_PAGES):
            if url is None:
                return items
            data, headers = self._get(url)
            if not isinstance(data, list):
                raise GitHubError(f"GET {path}: expected a list, got {type(data).__name__}")
            items += data
            found = _NEXT.search(headers.get("Link", "") or "")
            url = found.group(1) if found else None
        raise GitHubError(f"GET {path}: more than {MAX_PAGES} pages")

    def get(self, path: str) -> Any:
        return self._get(f"{self.api.rstrip('/')}{path}")[0]

    def _get(self, url: str) -> tuple[Any, Message]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "cardrunner",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for _ in range(4):
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(url, headers=headers), timeout=30
                ) as answer:
                    return json.loads(answer.read().decode("utf-8")), answer.headers
            except urllib.error.HTTPError as error:
                wait = _rate_limit_wait(error)
                if wait is None:
                    raise GitHubError(_refusal(url, error)) from error
                if wait > self.max_wait:
                    raise GitHubError(
                        f"GitHub's rate limit: try again in {wait:.0f} s "
                        f"(longer than the {self.max_wait:.0f} s cardrunner waits)"
                    ) from error
                self.waited.append(wait)
                self.sleep(wait)
            except (urllib.error.URLError, OSError, ValueError) as error:
                raise GitHubError(f"cannot read {url}: {error}") from error
        raise GitHubError(f"GitHub's rate limit did not lift after waiting for {url}")


def _rate_limit_wait(error: urllib.error.HTTPError) -> float | None:
    """Seconds to wait for a rate-limit answer; None when the answer is not one."""
    if error.code not in (403, 429):
        return None
    retry = error.headers.get("Retry-After")
    if retry and retry.strip().isdigit():
        return float(retry)
    if error.headers.get("x-ratelimit-remaining") == "0":
        reset = error.headers.get("x-ratelimit-reset", "")
        return max(float(reset) - time.time(), 0.0) + 1 if reset.isdigit() else 60.0
    return 60.0 if error.code == 429 else None


def _refusal(url: str, error: urllib.error.HTTPError) -> str:
    try:
        said = json.loads(error.read().decode("utf-8")).get("message", "")
    except (ValueError, AttributeError, OSError):
        said = ""
    hint = " (set GITHUB_TOKEN or run `gh auth login`)" if error.code in (401, 403, 404) else ""
    return f"GET {url}: HTTP {error.code} {said or error.reason}{hint}"
