"""Token counts and a prompt-cache simulation honest enough to compare caching strategies.

Tokens are estimated as a quarter of the JSON characters. The cache works like the API's: the
prompt is a sequence of blocks in canonical order (tools, system, message content); each
`cache_control` breakpoint — and the top-level `cache_control`, which marks the last block —
writes the prefix up to and including its block, if that prefix is at least
`min_cacheable_tokens` long and new. A request reads the longest written prefix it still matches
(looking back at most `lookback_blocks` blocks from each breakpoint, as the API does); what lies
between the read prefix and the last written breakpoint is billed as cache creation, the rest as
plain input. Entries live 5 minutes or 1 hour from their last use.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def estimate_tokens(value: Any) -> int:
    """ceil(characters of the JSON / 4): the fake's token count for anything."""
    return math.ceil(len(_json(value)) / 4)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Segment:
    """One cacheable block: its canonical JSON and its breakpoint TTL, if it has one."""

    text: str
    ttl: str | None


def segments(body: dict[str, Any]) -> list[Segment]:
    """The request's cacheable blocks in canonical order, `cache_control` itself left out."""
    out: list[Segment] = []

    def add(kind: str, block: Any) -> None:
        ttl = _breakpoint_ttl(block)
        if isinstance(block, dict):
            block = _without_cache_control(block)
        out.append(Segment(_json([kind, block]), ttl))

    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add("system", block)
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            add(str(message.get("role")), block)
    top = body.get("cache_control")
    if isinstance(top, dict) and out and out[-1].ttl is None:
        out[-1] = Segment(out[-1].text, str(top.get("ttl", "5m")))
    return out


def _breakpoint_ttl(block: Any) -> str | None:
    if not isinstance(block, dict):
        return None
    marks = [block.get("cache_control")]
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        marks += [b.get("cache_control") for b in block["content"] if isinstance(b, dict)]
    ttls = [str(m.get("ttl", "5m")) for m in marks if isinstance(m, dict)]
    return ("1h" if "1h" in ttls else "5m") if ttls else None


def _without_cache_control(block: dict[str, Any]) -> dict[str, Any]:
    clean = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(clean.get("content"), list):
        clean["content"] = [
            _without_cache_control(b) if isinstance(b, dict) else b for b in clean["content"]
        ]
    return clean


@dataclass(frozen=True)
class CacheUsage:
    """How one request's input tokens split between plain input, cache reads and cache writes."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m: int
    cache_creation_1h: int

    @property
    def cache_creation_input_tokens(self) -> int:
        """All tokens written to the cache, both TTLs."""
        return self.cache_creation_5m + self.cache_creation_1h

    def as_usage(self, output_tokens: int) -> dict[str, Any]:
        """The `usage` object of a Messages API response."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_creation_5m,
                "ephemeral_1h_input_tokens": self.cache_creation_1h,
            },
            "service_tier": "standard",
        }


class PromptCache:
    """The server-wide set of cached prefixes (hashes, with expiry times)."""

    def __init__(
        self,
        min_cacheable_tokens: int = 512,
        lookback_blocks: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_cacheable_tokens = min_cacheable_tokens
        self.lookback_blocks = lookback_blocks
        self._clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # hash -> (expiry, lifetime)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry (as if they had all expired)."""
        self._entries.clear()

    def count(self, body: dict[str, Any]) -> int:
        """Input tokens of the request, caching aside (what count_tokens answers)."""
        return math.ceil(sum(len(s.text) for s in segments(body)) / 4)

    def measure(self, body: dict[str, Any]) -> CacheUsage:
        """Split the request's input tokens, reading and writing the cache as the API would."""
        blocks = segments(body)
        hashes, tokens = self._prefixes(str(body.get("model")), blocks)
        now = self._clock()
        for key in [k for k, (expiry, _) in self._entries.items() if expiry <= now]:
            del self._entries[key]
        breakpoints = [i for i, s in enumerate(blocks) if s.ttl]
        read_at = max(
            (
                i
                for bp in breakpoints
                for i in range(max(0, bp - self.lookback_blocks + 1), bp + 1)
                if hashes[i] in self._entries
            ),
            default=-1,
        )
        read = tokens[read_at] if read_at >= 0 else 0
        if read_at >= 0:  # a read refreshes the entry's lifetime
            lifetime = self._entries[hashes[read_at]][1]
            self._entries[hashes[read_at]] = (now + lifetime, lifetime)
        written = {"5m": 0, "1h": 0}
        start = read
        for bp in breakpoints:
            if bp <= read_at or tokens[bp] < self.min_cacheable_tokens:
                continue
            ttl_name = str(blocks[bp].ttl)
            written[ttl_name] += tokens[bp] - start
            start = tokens[bp]
            lifetime = TTL_SECONDS.get(ttl_name, 300.0)
            self._entries[hashes[bp]] = (now + lifetime, lifetime)
        total = tokens[-1] if tokens else 0
        return CacheUsage(
            input_tokens=total - start,
            cache_read_input_tokens=read,
            cache_creation_5m=written["5m"],
            cache_creation_1h=written["1h"],
        )

    @staticmethod
    def _prefixes(model: str, blocks: list[Segment]) -> tuple[list[str], list[int]]:
        digest = hashlib.sha256(model.encode())
        hashes: list[str] = []
        tokens: list[int] = []
        chars = 0
        for segment in blocks:
            digest.update(segment.text.encode())
            digest.update(b"\x00")
            hashes.append(digest.copy().hexdigest())
            chars += len(segment.text)
            tokens.append(math.ceil(chars / 4))
        return hashes, tokens
