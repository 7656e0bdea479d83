"""What a Messages endpoint can do, asked once and kept: the profile requests are shaped by.

Ollama, llama.cpp, vLLM, LiteLLM and the hosted gateways all answer `/v1/messages`, but each
takes a different part of it: some refuse `thinking` or return thinking without signatures
(so the next request fails the check), some refuse images, most serve a window far below the
1M cardrunner would otherwise assume. Guessing made runs fail after rounds of paid work; asking
costs a few small requests once per endpoint and model. The probe (`probe`) makes a tool-use
round trip (with `cache_control` on the system prompt and thinking asked for), sends a 1×1
image, calls `count_tokens`, and reads the window where the server tells it (Ollama
`/api/show`, llama.cpp `/props`, vLLM `/v1/models`). The result is kept per endpoint and model
in the user's folder (`endpoints.json`), and becomes `[models.NAME]` fields (`Profile.fields`)
under whatever the user's own `[models.NAME]` sets (`profiled`).

The Anthropic API, Bedrock and Vertex are not probed: the model table describes them.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cardrunner.config.model_table import MODELS
from cardrunner.config.paths import user_dir
from cardrunner.config.settings import EndpointSettings, ModelOverride, Settings

ANTHROPIC_API = "https://api.anthropic.com"
STORE = "endpoints.json"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
"""A 1×1 PNG: the cheapest image an endpoint can be asked to take."""
PROBE_TOOL = {
    "name": "echo",
    "description": "Returns its text.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
PROBE_SYSTEM = "You are a probe. When asked to, call the echo tool; otherwise answer in one word."


def endpoint_of(endpoint: EndpointSettings, env: Mapping[str, str]) -> str:
    """The endpoint's name in profiles and messages: a URL, or `bedrock:REGION`/`vertex:…`."""
    if endpoint.provider == "bedrock":
        return f"bedrock:{endpoint.region or env.get('AWS_REGION', '')}"
    if endpoint.provider == "vertex":
        return f"vertex:{endpoint.project or ''}/{endpoint.region or ''}"
    url = endpoint.base_url or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API
    return url.rstrip("/")


def probed_kind(endpoint: str) -> bool:
    """Whether `endpoint` is one whose abilities are asked rather than taken from the table."""
    return endpoint.startswith(("http://", "https://")) and endpoint != ANTHROPIC_API


@dataclass(frozen=True)
class Profile:
    """What one endpoint answered for one model. `None`/"unknown": not asked, or no answer."""

    endpoint: str
    model: str
    tools: bool | None = None
    cache: str = "unknown"
    """`honoured` (cache tokens reported), `ignored` (accepted, none reported), `refused`."""
    thinking: str = "unknown"
    """`signed` (signatures the endpoint accepts back), `unsigned`, `refused`, `absent`."""
    images: bool | None = None
    count_tokens: bool | None = None
    context_window: int | None = None
    window_from: str = ""
    problems: list[str] = field(default_factory=list)
    """The endpoint's own words for what failed, kept whole."""
    probed_at: float = 0.0

    def fields(self) -> dict[str, Any]:
        """The `[models.NAME]` fields this profile decides: no thinking unless it is signed
        and taken back, no images where refused, the window the server told."""
        out: dict[str, Any] = {}
        if self.thinking != "signed":
            out["thinking"] = "none"
        if self.images is False:
            out["images"] = False
        if self.context_window:
            out["context_window"] = self.context_window
        return out

    def lines(self) -> list[str]:
        """The profile in words (`cardrunner check --endpoint`)."""
        window = (
            f"{self.context_window:,} tokens ({self.window_from})"
            if self.context_window
            else "not told by the server: set [models.NAME] context_window"
        )
        said = {True: "yes", False: "no", None: "unknown"}
        return [
            f"endpoint {self.endpoint}, model {self.model} (asked "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.probed_at))})",
            f"  tool-use round trip: {said[self.tools]}",
            f"  cache_control: {self.cache}"
            + (
                " (or the probe's short prompt is below its minimum)"
                if self.cache == "ignored"
                else ""
            ),
            f"  thinking: {self.thinking}"
            + ("" if self.thinking == "signed" else " (cardrunner sends no thinking)"),
            f"  images: {said[self.images]}",
            f"  count_tokens: {said[self.count_tokens]}",
            f"  context window: {window}",
            *(f"  the endpoint said: {p}" for p in self.problems),
        ]


def store_path(env: Mapping[str, str]) -> Path:
    return user_dir(env) / STORE


def load_profile(endpoint: str, model: str, env: Mapping[str, str]) -> Profile | None:
    """The kept profile of `model` at `endpoint` (None: never probed, or unreadable)."""
    try:
        data = json.loads(store_path(env).read_text(encoding="utf-8"))
        profile = Profile(**data[f"{endpoint} {model}"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    window, images = profile.context_window, profile.images
    sound = (window is None or (type(window) is int and window > 0)) and images in (
        None,
        True,
        False,
    )
    return profile if sound and isinstance(profile.thinking, str) else None  # a hand-edited file


def keep_profile(profile: Profile, env: Mapping[str, str]) -> None:
    """Add or replace `profile` in the user's `endpoints.json` (written whole, then renamed)."""
    path = store_path(env)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data[f"{profile.endpoint} {profile.model}"] = asdict(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    part.replace(path)


def profiled(settings: Settings, profile: Profile) -> Settings:
    """`settings` with the profile's fields under `[models.NAME]`; what the user's own
    `[models.NAME]` sets wins over what the endpoint answered."""
    own = settings.models.get(profile.model)
    mine = own.changes() if own is not None else {}
    decided = {k: v for k, v in profile.fields().items() if k not in mine}
    if not decided:
        return settings
    override = ModelOverride.model_validate({**decided, **mine})
    models = {**settings.models, profile.model: override}
    return settings.model_copy(update={"models": models})


# -- the window the server tells --------------------------------------------------------------


def _get(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"content-type": "application/json"} if data else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read(1_000_000))


def _ollama(root: str, model: str) -> tuple[int, str] | None:
    shown = _get(f"{root}/api/show", {"model": model})
    for line in str(shown.get("parameters", "")).splitlines():
        name, _, value = line.partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value), "Ollama /api/show num_ctx"
    info = shown.get("model_info") or {}
    trained = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)]
    # Ollama serves a model at its own default context (4,096) unless num_ctx is set.
    served = min([4096, *trained])
    return served, "Ollama's default num_ctx (4,096; /api/show sets no num_ctx)"


def _llamacpp(root: str, model: str) -> tuple[int, str] | None:
    props = _get(f"{root}/props")
    n_ctx = props.get("n_ctx") or (props.get("default_generation_settings") or {}).get("n_ctx")
    return (int(n_ctx), "llama.cpp /props n_ctx") if isinstance(n_ctx, int) else None


def _vllm(root: str, model: str) -> tuple[int, str] | None:
    for entry in _get(f"{root}/v1/models").get("data", []):
        if entry.get("id") == model and isinstance(entry.get("max_model_len"), int):
            return int(entry["max_model_len"]), "vLLM /v1/models max_model_len"
    return None


def server_window(base_url: str, model: str) -> tuple[int, str] | None:
    """The context window the server at `base_url` says it serves `model` with, if it says."""
    root = base_url.rstrip("/").removesuffix("/v1")
    for ask in (_ollama, _llamacpp, _vllm):
        try:
            found = ask(root, model)
        except (OSError, ValueError, AttributeError, TypeError):
            continue
        if found is not None and found[0] > 0:
            return found
    return None


# -- the probe ---------------------------------------------------------------------------------


def _said(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}: {exc}" if status else f"{type(exc).__name__}: {exc}"


async def _round_trip(client: Any, model: str, profile: Profile) -> Profile:
    """A tool call and its result, with cache_control and thinking asked for; what was refused
    is asked again without it."""
    system = [{"type": "text", "text": PROBE_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    ask: dict[str, Any] = {"model": model, "max_tokens": 1024, "tools": [PROBE_TOOL]}
    first = [{"role": "user", "content": "Call the echo tool with the text 'ok'."}]
    thinking: dict[str, Any] | None = {"type": "adaptive"}
    problems = list(profile.problems)
    answer = None
    for attempt in range(3):
        extra = {"thinking": thinking} if thinking else {}
        try:
            answer = await client.messages.create(**ask, system=system, messages=first, **extra)
            break
        except Exception as exc:  # the endpoint's refusal is the finding
            problems.append(_said(exc))
            if thinking is not None:
                thinking, profile = None, replace(profile, thinking="refused")
            elif attempt == 1:
                system = [{"type": "text", "text": PROBE_SYSTEM}]
                profile = replace(profile, cache="refused")
    if answer is None:
        return replace(profile, tools=False, problems=problems)
    content = [b.model_dump(mode="json", exclude_none=True) for b in answer.content]
    calls = [b for b in content if b.get("type") == "tool_use"]
    thought = [b for b in content if b.get("type") == "thinking"]
    if profile.thinking != "refused":
        signed = thought and all(b.get("signature") for b in thought)
        profile = replace(
            profile, thinking="signed" if signed else "unsigned" if thought else "absent"
        )
    cached = (answer.usage.cache_creation_input_tokens or 0) + (
        answer.usage.cache_read_input_tokens or 0
    )
    if profile.cache != "refused":
        profile = replace(profile, cache="honoured" if cached else "ignored")
    if not calls:
        return replace(profile, tools=False, problems=[*problems, "no tool call in the answer"])
    results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "ok"} for c in calls]
    second = [
        *first,
        {"role": "assistant", "content": content},
        {"role": "user", "content": results},
    ]
    extra = {"thinking": thinking} if thinking else {}
    try:
        await client.messages.create(**ask, system=system, messages=second, **extra)
        return replace(profile, tools=True, problems=problems)
    except Exception as exc:
        problems.append(_said(exc))
    if not thought:
        return replace(profile, tools=False, problems=problems)
    # The thinking it returned is not taken back: the conversation goes on without thinking.
    bare = [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
    second[1] = {"role": "assistant", "content": bare}
    try:
        await client.messages.create(**ask, system=system, messages=second)
        return replace(profile, tools=True, thinking="unsigned", problems=problems)
    except Exception as exc:
        return replace(profile, tools=False, thinking="unsigned", problems=[*problems, _said(exc)])


async def _images(client: Any, model: str, profile: Profile) -> Profile:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    content = [image, {"type": "text", "text": "One word: what colour is this?"}]
    try:
        await client.messages.create(
            model=model,
            max_tokens=64,
            system=PROBE_SYSTEM,
            messages=[{"role": "user", "content": content}],
        )
        return replace(profile, images=True)
    except Exception as exc:
        return replace(profile, images=False, problems=[*profile.problems, _said(exc)])


async def _count(client: Any, model: str, profile: Profile) -> Profile:
    try:
        counted = await client.messages.count_tokens(
            model=model, messages=[{"role": "user", "content": "ok"}]
        )
        return replace(profile, count_tokens=bool(getattr(counted, "input_tokens", 0)))
    except Exception:  # most endpoints have none; nothing depends on it
        return replace(profile, count_tokens=False)


async def probe(base_url: str, model: str, client: Any | None = None) -> Profile:
    """Ask the endpoint at `base_url` what it can do for `model` (a handful of small requests)."""
    if client is None:
        import anthropic  # lazy: the language server never reaches this module

        client = anthropic.AsyncAnthropic(base_url=base_url, max_retries=0, timeout=120)
    profile = Profile(endpoint=base_url.rstrip("/"), model=model, probed_at=time.time())
    window = await asyncio.to_thread(server_window, base_url, model)
    if window is not None:
        profile = replace(profile, context_window=window[0], window_from=window[1])
    profile = await _round_trip(client, model, profile)
    if profile.tools:
        profile = await _images(client, model, profile)
    return await _count(client, model, profile)


@dataclass
class Endpointed:
    """The settings with what the endpoint's profile decides, what to tell the user, and why
    the run must not start (empty: it may)."""

    settings: Settings
    where: str
    notes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


def _window_known(settings: Settings, model: str) -> bool:
    own = settings.models.get(model)
    return (
        model in MODELS
        or settings.options.context_window is not None
        or (own is not None and "context_window" in own.model_fields_set)
    )


async def for_endpoint(settings: Settings, env: Mapping[str, str]) -> Endpointed:
    """`settings` shaped by the endpoint's kept profile; a model the table does not know, at
    an endpoint other than the Anthropic API, is probed at its first run. A window nobody
    told (the server, the table, `[models.NAME]`) refuses the run: guessing one is what made
    runs fail after paid rounds."""
    model, where = settings.model, endpoint_of(settings.endpoint, env)
    if not probed_kind(where):
        return Endpointed(settings, where)
    notes: list[str] = []
    profile = await asyncio.to_thread(load_profile, where, model, env)
    if profile is None and model not in MODELS and settings.endpoint.probe:
        profile = await probe(where, model)
        await asyncio.to_thread(keep_profile, profile, env)
        notes.append(
            f"asked {where} what it can do for {model} (kept in {store_path(env)}; "
            f"`cardrunner check --endpoint` asks again): " + "; ".join(profile.lines()[1:])
        )
    if profile is not None:
        settings = profiled(settings, profile)
    refusals = []
    if not _window_known(settings, model):
        refusals.append(
            f"the context window of {model} at {where} is unknown (the server does not tell "
            f"it and the model table has no {model}); set [models.{model}] context_window to "
            "the window the endpoint serves (docs/endpoints.md)"
        )
    return Endpointed(settings, where, notes, refusals)
