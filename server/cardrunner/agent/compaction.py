"""Keep a long run inside the context window without breaking the conversation's rules.

Two steps, only when the estimate passes `compact_at` of the window: first, tool results older
than the newest `keep` are replaced by a one-line stub (tool, arguments, size, how to get it
back); if that is not enough, the oldest whole rounds (assistant turn + its results) are removed
and a summary of them is added to the first user message. Whole rounds go, so tool_use/tool_result
pairs stay valid.

Rewriting an earlier message changes the prefix of every thinking block after it, and on the
preserved-thinking models such a block fails the API's prefix check (a 400). So each step also
removes the thinking from the turns it keeps after the first message it rewrote — the option the
API documents for trimmed conversations; turns before it keep their thinking, which is still
valid. Compaction happens in steps, not every round, so the prompt cache keeps working between
steps. `apply_stubs` and `apply_summary` are deterministic, so a resume redoes a logged
compaction exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from cardrunner.agent.events import Compacted
from cardrunner.agent.model import Block, Message

THINKING = frozenset({"thinking", "redacted_thinking"})
STUB_PREFIX = "[compacted]"
SUMMARY_PREFIX = "SUMMARY OF EARLIER ROUNDS (removed to save context)"


def estimate_tokens(messages: list[Message], extra: int = 0) -> int:
    """A cheap, stable estimate (4 characters a token) — good enough to decide when to compact."""
    return extra + math.ceil(len(json.dumps([m.wire() for m in messages], ensure_ascii=False)) / 4)


def _message_tokens(message: Message) -> int:
    return math.ceil(len(json.dumps(message.wire(), ensure_ascii=False)) / 4)


def _calls(messages: list[Message]) -> dict[str, Block]:
    return {
        b["id"]: b
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if b.get("type") == "tool_use"
    }


def _result_text(block: Block) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content if c.get("type") == "text")


def stub_for(call: Block | None, block: Block) -> str:
    name = call["name"] if call else "tool"
    args = json.dumps(call.get("input", {}) if call else {}, ensure_ascii=False)
    args = args if len(args) <= 120 else args[:117] + "..."
    size = len(_result_text(block))
    return f"{STUB_PREFIX} {name}({args}) returned {size:,} characters; re-run the tool to see it again."


class Compactor:
    """Decides when and what to compact; mutates the conversation in place."""

    def __init__(self, context_window: int, share: float, keep: int, overhead: int = 0) -> None:
        self.threshold = int(context_window * share)
        self.keep = keep
        self.overhead = overhead
        """Tokens of system prompt and tools, sent with every request."""
        self._count, self._total = 0, overhead
        self._last: Message | None = None

    def _estimate(self, messages: list[Message]) -> int:
        """`estimate_tokens`, kept as a running total: the loop only appends messages, so a
        round costs its new messages, not the whole history. Anything else (a shorter list, a
        different last message, a compaction) starts the count again."""
        n = self._count
        if n == 0 or n > len(messages) or messages[n - 1] is not self._last:
            n, self._total = 0, self.overhead
        for m in messages[n:]:
            self._total += _message_tokens(m)
        self._count = len(messages)
        self._last = messages[-1] if messages else None
        return self._total

    def compact(self, messages: list[Message], force: bool = False) -> Iterator[Compacted]:
        """Compact when past the threshold; `force` (the API said the window is exceeded)
        compacts now, down to half of what it is."""
        before = self._estimate(messages)
        limit = min(self.threshold, before // 2) if force else self.threshold
        if before <= limit:
            return
        self._count = 0
        ids = self._stub_candidates(messages)
        if ids:
            dropped = self.apply_stubs(messages, ids)
            after = estimate_tokens(messages, self.overhead)
            yield Compacted(
                kind="stub_tool_results",
                dropped=dropped,
                tokens_before=before,
                tokens_after=after,
                tool_use_ids=ids,
            )
            before = after
        if before > limit and (removal := self._rounds_to_remove(messages, limit)):
            summary = summarize(messages[1 : 1 + removal])
            dropped = [f"{removal} messages (rounds 1–{removal // 2} of the kept conversation)"]
            self.apply_summary(messages, removal, summary)
            yield Compacted(
                kind="summary",
                dropped=dropped,
                tokens_before=before,
                tokens_after=estimate_tokens(messages, self.overhead),
                removed_messages=removal,
                summary=summary,
            )

    def _stub_candidates(self, messages: list[Message]) -> list[str]:
        results = [
            b
            for m in messages
            if m.role == "user"
            for b in m.content
            if b.get("type") == "tool_result" and not _result_text(b).startswith(STUB_PREFIX)
        ]
        old = results[: max(0, len(results) - self.keep)]
        return [b["tool_use_id"] for b in old if len(_result_text(b)) > 200]

    @staticmethod
    def apply_stubs(messages: list[Message], ids: list[str]) -> list[str]:
        """Replace the named tool results by stubs; returns what was dropped, for the log."""
        calls, wanted, dropped = _calls(messages), set(ids), []
        first: int | None = None
        for index, m in enumerate(messages):
            if m.role != "user":
                continue
            for i, b in enumerate(m.content):
                if b.get("type") == "tool_result" and b.get("tool_use_id") in wanted:
                    stub = stub_for(calls.get(b["tool_use_id"]), b)
                    new: Block = {
                        "type": "tool_result",
                        "tool_use_id": b["tool_use_id"],
                        "content": stub,
                    }
                    if b.get("is_error"):
                        new["is_error"] = True
                    m.content[i] = new
                    dropped.append(stub[len(STUB_PREFIX) + 1 :])
                    first = index if first is None else first
        if first is not None:
            strip_thinking(messages, after=first)
        return dropped

    def _rounds_to_remove(self, messages: list[Message], limit: int) -> int:
        """An even number of messages after the first, leaving the newest rounds in place."""
        removable = len(messages) - 1 - 2 * max(2, self.keep // 2)
        removable -= removable % 2
        if removable <= 0:
            return 0
        total = estimate_tokens(messages, self.overhead)
        remove = 0
        while remove < removable and total > limit * 0.7:
            total -= estimate_tokens(messages[1 + remove : 3 + remove])
            remove += 2
        return remove

    @staticmethod
    def apply_summary(messages: list[Message], removal: int, summary: str) -> None:
        """Remove `removal` messages after the first and put `summary` into the first."""
        del messages[1 : 1 + removal]
        first = messages[0]
        kept = [b for b in first.content if not b.get("text", "").startswith(SUMMARY_PREFIX)]
        old = [b["text"] for b in first.content if b.get("text", "").startswith(SUMMARY_PREFIX)]
        text = summary if not old else old[0] + "\n" + summary.split("\n", 1)[1]
        first.content = [*kept, {"type": "text", "text": text}]
        strip_thinking(messages, after=0)


def strip_thinking(messages: list[Message], after: int) -> int:
    """Remove the thinking blocks of every assistant turn after message `after`; how many.

    A turn that held nothing but thinking keeps one line saying so (content may not be empty)."""
    removed = 0
    for m in messages[after + 1 :]:
        if m.role != "assistant" or not any(b.get("type") in THINKING for b in m.content):
            continue
        kept = [b for b in m.content if b.get("type") not in THINKING]
        removed += len(m.content) - len(kept)
        m.content = kept or [{"type": "text", "text": "(thinking removed by compaction)"}]
    return removed


def summarize(removed: list[Message]) -> str:
    """A factual account of removed rounds: what was called and what came back (first line)."""
    lines = [SUMMARY_PREFIX + ":"]
    results = {
        b["tool_use_id"]: b
        for m in removed
        if m.role == "user"
        for b in m.content
        if b.get("type") == "tool_result"
    }
    for m in removed:
        if m.role != "assistant":
            continue
        for b in m.content:
            if b.get("type") == "text" and b.get("text", "").strip():
                lines.append(f"- you wrote: {b['text'].strip().splitlines()[0][:160]}")
            elif b.get("type") == "tool_use":
                res: dict[str, Any] = results.get(b["id"], {})
                first = (_result_text(res).strip().splitlines() or [""])[0][:120]
                status = "error" if res.get("is_error") else "ok"
                args = json.dumps(b.get("input", {}), ensure_ascii=False)[:100]
                lines.append(f"- {b['name']}({args}) → {status}: {first}")
    return "\n".join(lines)
