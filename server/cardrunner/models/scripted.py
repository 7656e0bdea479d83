"""A model that plays a transcript, makes its scripted edits whole, and checks every request.

Used by tests, by `cardrunner run --replay FILE` and by the demo: the tools are real, only the
model's answers are scripted. A request the real API would reject (unpaired tool_use, edited
thinking block, `temperature`, too many cache breakpoints …) raises `ScriptViolation` at once,
so wiring mistakes fail loudly instead of passing silently.

A transcript's `write_file` may say *what to change* instead of the whole file. A real model
reads a file, then writes its complete new content. A transcript cannot know the content in
advance when earlier cards changed the file, so a step may give
`{"path": P, "edit": [[old, new], ...]}`: the scripted model takes the text of P from the
`read_file` results already in the conversation (stitching paged reads), applies the
replacements and sends the whole file — exactly what a model would have done with what it read.
If the file was not read, or an `old` text is not in it, the edit cannot be made honestly.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cardrunner.agent.events import Usage
from cardrunner.agent.model import Block, ModelRequest, ModelResponse
from cardrunner.apirules.request import build_body, request_headers

_PAGE = re.compile(r"^\[(?P<path>.+?): lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\]\n")
_TAIL = re.compile(r"\n\[call read_file with start_line=\d+ to read on\]$")


class EditError(ValueError):
    """The scripted edit cannot be made from what the conversation shows."""


def _reads(messages: list[dict[str, Any]], path: str) -> list[str]:
    """Results of `read_file(path)` calls in the conversation, oldest first."""
    wanted: set[str] = set()
    out: list[str] = []
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use" and block.get("name") == "read_file":
                if block.get("input", {}).get("path") == path:
                    wanted.add(block["id"])
            elif (
                block.get("type") == "tool_result"
                and block.get("tool_use_id") in wanted
                and not block.get("is_error")
                and isinstance(block.get("content"), str)
            ):
                out.append(block["content"])
    return out


def file_text(messages: list[dict[str, Any]], path: str) -> str:
    """The newest full text of `path` the conversation has seen."""
    pages: dict[int, list[str]] = {}
    total = None
    for text in _reads(messages, path):
        page = _PAGE.match(text)
        if page is None:  # the whole file in one read
            pages = {i + 1: [line] for i, line in enumerate(text.splitlines(keepends=True))}
            total = len(pages)
            continue
        body = _TAIL.sub("", text[page.end() :])
        first, total = int(page["a"]), int(page["n"])
        for i, line in enumerate(body.splitlines(keepends=True)):
            pages[first + i] = [line]
    if total is None:
        raise EditError(f"{path} was never read in this conversation")
    missing = [i for i in range(1, total + 1) if i not in pages]
    if missing:
        raise EditError(f"lines {missing[0]}.. of {path} were never read")
    return "".join(pages[i][0] for i in range(1, total + 1))


def apply_edit(messages: list[dict[str, Any]], path: str, edits: list[list[str]]) -> str:
    """The whole new content of `path`: what was read, with each [old, new] replaced once."""
    text = file_text(messages, path)
    for old, new in edits:
        if text.count(old) != 1:
            found = "not found" if old not in text else "found more than once"
            raise EditError(f"the text to change in {path} was {found}: {old.strip()[:60]!r}")
        text = text.replace(old, new)
    return text


Responder = Callable[[dict[str, Any], int], dict[str, Any]]
Step = dict[str, Any] | Responder


class ScriptViolation(AssertionError):
    """The loop sent a request the real API would reject, or the script ran out."""


def load_transcript(path: Path) -> list[dict[str, Any]]:
    """Read a transcript file: `{"responses": [{"content": [...], "stop_reason": ...}, ...]}`.

    `"criteria_from": 0` marks a transcript made when `report_criterion` counted criteria from
    0: its indexes are played one higher, as today's tool counts them. Without it they count
    from 1, and an index 0 fails here, naming the fix, rather than report on the wrong one."""
    data = json.loads(path.read_text(encoding="utf-8"))
    responses = data.get("responses") if isinstance(data, dict) else data
    if not isinstance(responses, list) or not all(isinstance(r, dict) for r in responses):
        raise ValueError(f"{path}: expected {{'responses': [ {{content, stop_reason}}, ... ]}}")
    first = data.get("criteria_from", 1) if isinstance(data, dict) else 1
    if first not in (0, 1) or isinstance(first, bool):
        raise ValueError(f"{path}: criteria_from is 0 (an older transcript) or 1, not {first!r}")
    return [_renumbered(response, first, path) for response in responses]


def _renumbered(response: dict[str, Any], first: int, path: Path) -> dict[str, Any]:
    """`response` with its `report_criterion` indexes counted from 1."""
    content = response.get("content")
    if not isinstance(content, list):
        return response
    blocks: list[Any] = []
    for block in content:
        ours = isinstance(block, dict) and block.get("name") == "report_criterion"
        args = block.get("input") if ours else None
        index = args.get("index") if isinstance(args, dict) else None
        if not isinstance(args, dict) or type(index) is not int:
            blocks.append(block)
        elif first == 0:
            blocks.append({**block, "input": {**args, "index": index + 1}})
        elif index == 0:
            raise ValueError(
                f"{path}: report_criterion with index 0, but criteria are numbered from 1; a "
                'transcript made before that says "criteria_from": 0 (docs/transcripts.md)'
            )
        else:
            blocks.append(block)
    return {**response, "content": blocks}


def _estimate(value: Any) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False)) / 4)


def _last_results(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    parts = []
    for block in last if isinstance(last, list) else []:
        content = block.get("content", block.get("text", ""))
        parts.append(
            content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        )
    return "\n".join(parts)


def _unmet(expected: list[str], body: dict[str, Any]) -> list[str]:
    """Expected strings missing from the tool results the step answers."""
    seen = _last_results(body)
    return [e for e in expected if e not in seen]


_NO_MODULE = re.compile(r"No module named '?([\w.]+)'?")


def _missing_module(body: dict[str, Any]) -> str | None:
    """A module some tool result of the conversation said is not installed, if any."""
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            content = block.get("content") if block.get("type") == "tool_result" else None
            text = content if isinstance(content, str) else json.dumps(content or "")
            if found := _NO_MODULE.search(text):
                return found.group(1)
    return None


def _results_by_id(body: dict[str, Any]) -> dict[str, str]:
    """Every tool result the conversation holds, by the id of the call it answers."""
    found: dict[str, str] = {}
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content", "")
                found[block["tool_use_id"]] = (
                    content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                )
    return found


def _unfounded(raw: dict[str, Any], body: dict[str, Any]) -> str | None:
    """A quote the step's evidence cites that the cited call's result does not contain."""
    results = _results_by_id(body)
    own = {b.get("id") for b in raw.get("content", []) if b.get("type") == "tool_use"}
    for block in raw.get("content", []):
        if block.get("type") != "tool_use" or block.get("name") != "report_criterion":
            continue
        for cite in block.get("input", {}).get("cites", []):
            if cite.get("call") in own:
                continue  # a call of this same turn: the evidence tool checks it when it runs
            seen = " ".join(results.get(cite.get("call", ""), "").split())
            if " ".join(str(cite.get("quote", "")).split()) not in seen:
                return f"{cite.get('quote')!r} is not in the result of call {cite.get('call')!r}"
    return None


def _honest_failure(problem: str, body: dict[str, Any]) -> dict[str, Any]:
    """When the code no longer fits the transcript, the scripted model says so instead of lying.

    A tool that could not import a module is a different story — an install problem, not a
    transcript that went stale — so it is named as the missing piece it is.
    """
    seen = _last_results(body).strip().splitlines()
    got = seen[0][:160] if seen else "(nothing)"
    module = _missing_module(body)
    why = (
        f"a missing piece, not the transcript: the module '{module}' is not installed for "
        "the interpreter the commands run with"
        if module
        else f"the code no longer fits this transcript: {problem}"
    )
    text = f"The last tool result said: {got}\nRESULT: failed: {why}"
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


class ScriptedModel:
    """Plays `steps` in order; each is a response dict or a function of (request body, index).

    A step may carry `"expect": [strings]`: text the tool results it answers must contain (the
    value the transcript is about to report as evidence). The quotes its `report_criterion`
    calls cite are expected the same way, in the results of the calls they cite. If one is
    missing, the model answers `RESULT: failed` naming it, so a replay never claims what the
    tools did not show.

    `api_model` is the model the transcript stands in for: requests name it, so the rules of
    that model apply — on the preserved-thinking models every thinking signature is bound to
    its prefix and a changed prefix fails, as on the real API.
    """

    def __init__(
        self,
        steps: Sequence[Step],
        name: str = "scripted",
        api_model: str | None = None,
        honest: bool = True,
    ) -> None:
        """`honest=False` plays a model that lies on purpose: its evidence is sent as scripted
        even where the tools disagree (the adversarial tests of the runner's gate)."""
        from cardrunner.apirules.binding import SignatureBinder

        self._honest = honest
        self._steps = list(steps)
        self._name = name
        self._api_model = api_model or name
        self._binder = SignatureBinder(keep_recorded=True)  # a real run's transcript: as is
        self._ids = itertools.count(1)
        self.requests: list[dict[str, Any]] = []
        self._handed_out: set[str] = set()
        from cardrunner.apirules.promptcache import PromptCache

        self._cache = PromptCache()

    @property
    def name(self) -> str:
        return self._name

    @property
    def api_model(self) -> str:
        """The model the transcript stands in for (its rules apply to every request)."""
        return self._api_model

    @classmethod
    def from_file(cls, path: Path, api_model: str | None = None) -> ScriptedModel:
        return cls(load_transcript(path), name=f"replay:{path.name}", api_model=api_model)

    def assert_complete(self) -> None:
        """Fail if the loop made fewer model calls than the script has steps."""
        if len(self.requests) != len(self._steps):
            raise ScriptViolation(
                f"script has {len(self._steps)} responses but only {len(self.requests)} were requested"
            )

    async def respond(self, request: ModelRequest) -> ModelResponse:
        body = build_body(request, self._api_model)
        self._check(body, request_headers(request))
        index = len(self.requests)
        self.requests.append(body)
        if index >= len(self._steps):
            raise ScriptViolation(f"script exhausted: request {index + 1} has no scripted response")
        step = self._steps[index]
        raw = step(body, index) if callable(step) else step
        if missing := _unmet(raw.get("expect", []), body):
            raw = _honest_failure(f"expected {missing[0]!r} in the tool results", body)
        elif self._honest and (unfounded := _unfounded(raw, body)):
            raw = _honest_failure(unfounded, body)
        try:
            content = [self._complete(block, index, body) for block in raw.get("content", [])]
        except EditError as exc:
            raw = _honest_failure(str(exc), body)
            content = [self._complete(block, index, body) for block in raw["content"]]
        self._binder.sign_response(body, content)
        self._handed_out.add(json.dumps(content, sort_keys=True))
        if "usage" in raw:
            usage = Usage.model_validate(raw["usage"])
        else:  # what the API would bill, with its prompt cache simulated
            measured = self._cache.measure(body)
            usage = Usage(
                input_tokens=measured.input_tokens,
                output_tokens=_estimate(content),
                cache_read_input_tokens=measured.cache_read_input_tokens,
                cache_creation_input_tokens=measured.cache_creation_input_tokens,
            )
        return ModelResponse(
            content=content,
            stop_reason=raw.get("stop_reason", "end_turn"),
            usage=usage,
            model=self._name,
            id=f"msg_scripted_{index + 1}",
            body=body,
        )

    def resume_at(self, index: int, history: list[list[Block]]) -> None:
        """Continue a resumed run: skip `index` steps; `history` are the turns already played."""
        self.requests = [{} for _ in range(index)]
        self._handed_out.update(json.dumps(c, sort_keys=True) for c in history)

    def _complete(self, block: Block, index: int, body: dict[str, Any]) -> Block:
        block = dict(block)
        if block.get("type") == "tool_use" and "edit" in block.get("input", {}):
            args = dict(block["input"])
            args["content"] = apply_edit(body["messages"], args["path"], args.pop("edit"))
            block["input"] = args
        if block.get("type") == "tool_use":
            block.setdefault("id", f"toolu_{index + 1:03d}_{next(self._ids):04d}")
            block.setdefault("input", {})
        if block.get("type") == "thinking":
            block.setdefault("thinking", "")
        return block

    def _thinking_removed(self, message: dict[str, Any]) -> bool:
        """A handed-out turn with its thinking removed (compaction's documented way)."""
        content = message["content"]
        if any(b.get("type") in ("thinking", "redacted_thinking") for b in content):
            return False
        return any(
            [b for b in json.loads(c) if b.get("type") not in ("thinking", "redacted_thinking")]
            == content
            for c in self._handed_out
        )

    def _check(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        from cardrunner.apirules.validation import validate_request

        problems = list(validate_request(body))
        if not problems:
            problems += self._binder.check(body, headers).errors
        for message in body["messages"]:
            if message["role"] == "assistant":
                content = json.dumps(message["content"], sort_keys=True)
                if content not in self._handed_out and not self._thinking_removed(message):
                    problems.append("an assistant turn differs from what the model returned")
        if problems:
            raise ScriptViolation("invalid request: " + "; ".join(problems))
