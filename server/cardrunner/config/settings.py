"""One typed settings model, read once, shared by the CLI and the language server.

What each setting is, its type, default and bounds. Where the values come from, and which wins,
is config/loading.py's (`load_settings`): defaults, the user's own `config.toml`, the
repository's files, then overrides (CLI flags, LSP `initializationOptions` /
`workspace/configuration`) in the same shape — a repository can only tighten what the user set.

`[agent]` (`AgentSettings`) is what the agent is told besides the card, as the user allows it;
`Settings.agent` is its only reader.
"""

from __future__ import annotations

import posixpath
from datetime import date
from typing import Annotated, Any, Literal

from annotated_types import Gt
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cardrunner.config.confinement import GitHooks, Sandbox, TestArgs
from cardrunner.config.model_table import Effort, ModelSpec, Price, ThinkingKind, model_spec
from cardrunner.config.settingsfiles import McpServer


class AgentSettings(BaseModel):
    """The project's instructions (AGENTS.md) in the system prompt, and their size cap."""

    model_config = ConfigDict(extra="forbid")

    project_instructions: bool = Field(
        True,
        description="Read AGENTS.md (CLAUDE.md when there is none) at the repository root and "
        "every AGENTS.md in the write area into the system prompt, after cardrunner's rules.",
    )
    instructions_max_bytes: int = Field(
        16_384, ge=0, description="The cap over all instruction files; the cut is said."
    )


DEFAULT_MODEL = "claude-sonnet-5-5"

RunPriority = Literal["low", "lowest", "idle"]
"""How far an editor run yields the CPU: nice 10, nice 19, nice 19 + `SCHED_IDLE`
(`workers/priority.py`). Nothing above the default: a worker can lower itself, never raise itself."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelOverride(_Strict):
    """`[models.NAME]`: the model table's `ModelSpec` fields (the same names, types and
    defaults; tests/unit/config/test_models.py holds them together), of which only those set
    replace the table's entry — what pydantic's fields-set tracking is kept for."""

    context_window: Annotated[int, Gt(0)] = 1_000_000
    max_output_tokens: Annotated[int, Gt(0)] = 128_000
    thinking: ThinkingKind = "adaptive"
    default_effort: Effort | None = "high"
    price: Price | None = None
    as_of: date | None = None
    images: bool = True

    def changes(self) -> dict[str, object]:
        """The fields set, by name (what `model_table.model_spec` puts over the entry)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


Provider = Literal["anthropic", "bedrock", "vertex"]
TestRunner = Literal[
    "pytest", "unittest", "cargo", "go", "jest", "vitest", "mocha", "node", "tap",
    "googletest", "catch2", "unity", "ctest",
]  # fmt: skip
"""The runners whose summary cardrunner reads (verify/testcounts.py's `RUNNERS`)."""


class EndpointSettings(_Strict):
    """`[endpoint]`: where the Messages requests go. Read only from the user's own config.toml,
    the environment and the command line: a repository's files cannot set it
    (config/settingsfiles.py drops it with a problem), since the endpoint receives the code and
    the credentials go with the requests (docs/endpoints.md)."""

    provider: Provider = Field(
        "anthropic",
        description="'anthropic' (the API, or any Messages endpoint at base_url), 'bedrock' "
        "(AWS credentials from their usual places) or 'vertex' (Google's application default "
        "credentials).",
    )
    base_url: str | None = Field(
        None, description="None: ANTHROPIC_BASE_URL, else the provider's own address."
    )
    region: str | None = Field(
        None, description="Bedrock/Vertex region; None: AWS_REGION / CLOUD_ML_REGION."
    )
    project: str | None = Field(
        None, description="Vertex project; None: ANTHROPIC_VERTEX_PROJECT_ID."
    )
    probe: bool = Field(
        True,
        description="Ask an endpoint other than the Anthropic API what it can do before its "
        "first run (kept in the user's folder; `cardrunner check --endpoint` asks again).",
    )


class Limits(_Strict):
    """Budgets checked before every model call; 0 or None switches a limit off."""

    max_rounds: int = Field(60, ge=0, description="Model calls per run.")
    max_tokens: int = Field(
        400_000, ge=0, description="Input+output tokens per run, cache included."
    )
    max_cost_usd: float | None = Field(2.0, ge=0, description="USD per run at the price table.")
    max_consecutive_tool_errors: int = Field(
        3, ge=0, description="Rounds in a row in which every tool call failed."
    )
    max_wall_seconds: float | None = Field(None, ge=0, description="Wall-clock seconds per run.")


BUILD_OUTPUT = [
    "**/__pycache__/**", "**/*.py[co]", "**/*.egg-info/**", "**/.pytest_cache/**",
    "**/.mypy_cache/**", "**/.ruff_cache/**", "**/*.tsbuildinfo",
]  # fmt: skip
"""What builds and tests leave behind in a work tree whether or not `.gitignore` says so."""


class Paths(_Strict):
    """Folders (relative to the workspace) the model may read and write; checked in code."""

    read: list[str] = Field(default_factory=lambda: ["."])
    write: list[str] = Field(default_factory=lambda: ["src"])
    build_output: list[str] = Field(
        default_factory=lambda: list(BUILD_OUTPUT),
        description="Globs of files builds and tests write that are never a change, even where "
        "git does not ignore them: not in the diff, the review or the commit, and no hand edit. "
        "[] makes them ordinary files again.",
    )


class Commands(_Strict):
    """argv lists run without a shell; None means the tool reports it is not configured."""

    build: list[str] | None = None
    test: list[str] | None = None
    app: list[str] | None = None
    app_url: str | None = Field(
        None,
        description="The URL the app serves, e.g. http://localhost:5000/ (a port number means "
        "http://localhost:PORT/): start_app waits until it answers, the model is told where "
        "the app is, and a change of files restarts the running app.",
    )
    app_wait_seconds: float = Field(
        60, gt=0, description="How long start_app waits for app_url to answer."
    )
    test_args: TestArgs = Field(default_factory=TestArgs)
    test_report: str | None = Field(
        None,
        description="A JUnit XML file the test command writes (relative to the workspace): "
        "when it is written by the run, the tests are counted from it, not from the output.",
    )
    test_runner: TestRunner | None = Field(
        None,
        description="The runner whose summary the test command prints (go, ctest, cargo, "
        "pytest, jest, …): the tests are counted from that runner's lines only, nothing "
        "guessed. For a command cardrunner cannot tell by its output (`make test`).",
    )
    timeout_seconds: float = Field(
        600, gt=0, description="Build and test commands are killed after this."
    )
    folder: str = Field(
        ".",
        description="The folder (relative to the workspace) build, test and app run in; a "
        "package's commands run in the package's folder ([packages.NAME]).",
    )

    @field_validator("folder")
    @classmethod
    def _inside(cls, value: str) -> str:
        return inside_folder(value)

    @field_validator("app_url", mode="before")
    @classmethod
    def _port_or_url(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = f"http://localhost:{value}/"
        if isinstance(value, str) and not value.startswith(("http://", "https://")):
            raise ValueError("app_url must be an http:// or https:// URL, or a port number")
        return value

    @model_validator(mode="after")
    def _url_of_an_app(self) -> Commands:
        if self.app_url and not self.app:
            raise ValueError("app_url needs app: the command that starts the app")
        return self


def inside_folder(value: str) -> str:
    """`value` as a normalised relative folder inside the workspace; ValueError otherwise."""
    shown = posixpath.normpath(value.replace("\\", "/"))
    if posixpath.isabs(shown) or shown == ".." or shown.startswith("../"):
        raise ValueError(f"{value!r} must be a folder inside the repository")
    return shown


class PackagePaths(_Strict):
    """`[packages.NAME.paths]`: the package's write area, relative to its folder."""

    write: list[str] = Field(
        default_factory=lambda: ["src"],
        description="Folders or files (relative to the package's folder) the model may write.",
    )

    @field_validator("write")
    @classmethod
    def _inside(cls, value: list[str]) -> list[str]:
        return [inside_folder(v) for v in value]


class Package(_Strict):
    """`[packages.NAME]`: one package of a monorepo, with commands of its own (config/packages.py).

    Its own `cardrunner.toml` (in `path`) may set `[commands]` and `[paths] write` too, over
    what the root says of it; everything else stays the root's (config/settingsfiles.py)."""

    path: str = Field(description="The package's folder, relative to the repository root.")
    commands: Commands = Field(
        default_factory=Commands,
        description="The package's build, test and app, run in its folder; timeout_seconds, "
        "app_wait_seconds and test_args not set here are the root's [commands]'.",
    )
    paths: PackagePaths = Field(default_factory=PackagePaths)

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        folder = inside_folder(value)
        if folder == ".":
            raise ValueError("a package's path is a folder below the repository root")
        return folder


class ModelOptions(_Strict):
    """How requests are shaped. No sampling parameters exist here on purpose: none are sent."""

    max_output_tokens: int | None = Field(
        None, gt=0, description="Per answer; None: the model's maximum (128k on Sonnet 5.5)."
    )
    thinking: Literal["adaptive", "between_tools", "disabled"] = Field(
        "adaptive",
        description="`between_tools` is the lowest setting on the 5.5 models ('disabled' is "
        "refused there); 'disabled' is for older models.",
    )
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(
        None, description="Sent explicitly on every request; None: the model's default effort."
    )
    thinking_display: Literal["summarized", "omitted"] | None = Field(
        None,
        description="`thinking.display`; None: 'summarized' on the 5.x models (their text "
        "between tool calls arrives as thinking), else the model's default.",
    )
    drop_mismatched_thinking: bool = Field(
        False,
        description="Escape hatch for runs resumed from old logs: thinking that fails the "
        "prefix check is dropped by the API (`drop_block`, a beta) instead of failing the run.",
    )
    context_window: int | None = Field(
        None, gt=0, description="Tokens; None: the model's window from the model table."
    )
    compact_at: float = Field(
        0.5, gt=0, le=1, description="Share of the context window that triggers compaction."
    )
    keep_tool_results: int = Field(
        8, ge=0, description="Newest tool results never stubbed by compaction."
    )
    cache: bool = True
    request_timeout_seconds: float = Field(
        600, gt=0, description="Per request; a stalled stream fails after this."
    )
    max_retries: int = Field(
        3,
        ge=0,
        description="Retries of 5xx/529/dropped streams before api_error; a 429 that says how "
        "long to wait is waited out up to 10 times, within the wall budget.",
    )
    retry_max_delay_seconds: float = Field(
        30, ge=0, description="Cap on our own backoff; a server-given delay is honoured."
    )


class Settings(_Strict):
    """Everything configurable, with the defaults of DESIGN.md."""

    model: str = DEFAULT_MODEL
    cards: str = "cards"
    limits: Limits = Field(default_factory=Limits)
    paths: Paths = Field(default_factory=Paths)
    commands: Commands = Field(default_factory=Commands)
    packages: dict[str, Package] = Field(
        default_factory=dict,
        description="[packages.NAME]: a monorepo's packages, each with its own commands; a "
        "card names its package with `package:` (config/packages.py).",
    )
    mcp: dict[str, McpServer] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    models: dict[str, ModelOverride] = Field(
        default_factory=dict,
        description="[models.NAME]: override the model table (window, output, thinking, effort).",
    )
    options: ModelOptions = Field(default_factory=ModelOptions)
    endpoint: EndpointSettings = Field(default_factory=EndpointSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    require_evidence: bool = Field(
        True,
        description="Done needs grounded evidence for every criterion and the runner's own "
        "build and test run; false turns the evidence part of the gate off.",
    )
    verify_attempts: int = Field(
        2,
        ge=0,
        description="How often the runner answers a premature `RESULT: done` with what is "
        "missing before the run ends unverified (or tests_failed).",
    )
    isolation: bool | None = Field(
        None, description="Run in a git worktree; None: front end decides."
    )
    tool_timeout_seconds: float = Field(120, gt=0)
    run_priority: RunPriority = Field(
        "low",
        description="How far an editor run and what it starts (builds, tests, the app, MCP "
        "servers) yield the CPU to the editor: 'low' (nice 10), 'lowest' (nice 19), 'idle' "
        "(nice 19 + SCHED_IDLE: CPU only when nothing else wants it). The CLI ignores it.",
    )
    sandbox: Sandbox = Field(default_factory=Sandbox)
    git: GitHooks = Field(default_factory=GitHooks)
    replay: str | None = Field(
        None,
        description="A transcript file, or a folder of <card-stem>.json transcripts, played by the "
        "scripted model instead of calling the API (demo, tests, offline work).",
    )

    def dump(self) -> dict[str, Any]:
        """The settings as JSON, `[models.NAME]` with only what it sets: what the language
        server's child process hands over (`config/plainsettings.py`) and a worker validates again, so
        an override stays an override and does not become the whole entry."""
        values = self.model_dump(mode="json")
        values["models"] = {
            name: o.model_dump(mode="json", exclude_unset=True) for name, o in self.models.items()
        }
        return values

    def price(self, model: str | None = None) -> Price | None:
        """The price of `model` (default: the configured one), settings first, then built-in."""
        name = model or self.model
        return self.prices.get(name) or self.model_spec(name).price

    def model_spec(self, model: str | None = None) -> ModelSpec:
        """The model table's entry for `model`, with what `[models.NAME]` overrides."""
        name = model or self.model
        override = self.models.get(name)
        return model_spec(name, override.changes() if override is not None else None)

    def effective_options(self, model: str | None = None) -> ModelOptions:
        """`options` with what was left to the model filled in from the model table: the output
        limit, the context window and the effort (sent explicitly, never left to chance)."""
        spec, o = self.model_spec(model), self.options
        # On the 5.x models the text written between tool calls comes back as thinking, empty
        # under the default display: ask for it, so the live view and the log can show it.
        display = o.thinking_display
        if display is None and spec.thinking not in ("budget", "none") and o.thinking == "adaptive":
            display = "summarized"
        return o.model_copy(
            update={
                "max_output_tokens": o.max_output_tokens or spec.max_output_tokens,
                "context_window": o.context_window or spec.context_window,
                "effort": o.effort or spec.default_effort,
                "thinking_display": display,
            }
        )

    def refusals(self, model: str | None = None, limits: Limits | None = None) -> list[str]:
        """Why a run on `model` must not start with these settings: a thinking setting the
        model answers with 400, or a cost limit that could never stop it (no price)."""
        name = model or self.model
        out = [p] if (p := self.thinking_problem(name)) else []
        cap = (limits or self.limits).max_cost_usd
        if cap and self.price() is None:
            out.append(
                f"limits.max_cost_usd is ${cap:.2f} but model {self.model!r} has no price, so "
                f"the cost limit could never stop the run; add [prices.{self.model}] (input, "
                "output, cache_read, cache_write in USD per million tokens) to cardrunner.toml, "
                "or set max_cost_usd = 0 under [limits] to run without a cost limit"
            )
        return out

    def thinking_problem(self, model: str | None = None) -> str | None:
        """Why the thinking settings would be refused by the model (None: they are fine)."""
        name = model or self.model
        return self.model_spec(name).thinking_problem(
            name, self.options.thinking, self.options.effort
        )
