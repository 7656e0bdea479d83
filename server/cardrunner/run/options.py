"""What a front end decides about a run, what a resume adds, and the refusals before it starts.

Kept apart from `run/prepare.py` (which chooses the model and reads the resume log) because the
language server schedules runs without ever preparing one: it builds `RunOptions`, refuses early
without a key, and hands the options to a worker process. Nothing here reaches a model adapter,
so the server's import graph stays free of the SDKs (the import-linter contracts check it).

What a resume adds (`ResumeGrant`: rounds and cost) is here for the same reason: it is the one
value both the scheduler and the resume itself need.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cardrunner.agent.review import Approver
from cardrunner.card.card import CardStore, DiskCardStore
from cardrunner.config.secrets import SECRET_ENV_VARS
from cardrunner.processes.groups import ProcessGroups
from cardrunner.trust.consent import TrustAsker

if TYPE_CHECKING:  # the editor builds options with its first run: no pydantic before it
    from cardrunner.agent.model import Model
    from cardrunner.config.settings import Settings


@dataclass(frozen=True)
class ResumeGrant:
    """Extra budget for a resumed run (rounds and USD on top of what the run had)."""

    rounds: int = 0
    cost_usd: float = 0.0


__all__ = [
    "MISSING_KEY",
    "Preflight",
    "RunOptions",
    "RunRefused",
    "has_credentials",
    "refuse_early",
    "replay_path",
    "require_key",
    "transcript_of",
]


Preflight = Callable[[], Awaitable[list[str]]]
"""A front end's own check before a run opens: raises `RunRefused` to refuse, else returns notes."""


@dataclass
class RunOptions:
    """Everything a front end decides about one run; nothing here has been checked yet."""

    root: Path
    card_path: Path
    settings: Settings
    approver: Approver
    card_store: CardStore = field(default_factory=DiskCardStore)
    model: Model | None = None
    """A model the caller built itself; None lets `prepare_run` choose one."""
    replay: Path | None = None
    """The transcript to play (`--replay`, the demo); None falls back to `settings.replay`."""
    resume: ResumeGrant | None = None
    """Continue the card's last unfinished run, with this much extra budget."""
    run_id: str | None = None
    """The id a front end announced before the run started (the editor shows it at once)."""
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    """Where the API key is looked up (tests pass their own)."""
    commit_card_state: bool = True
    """Commit the card's final state after the run (`run/cardstore.py`). Off for `--no-commit`
    (nothing at all is committed) and on CI, which folds the card into its one commit."""
    processes: ProcessGroups = field(default_factory=ProcessGroups)
    """The run's ledger of process groups: its commands, app and MCP servers join it."""
    preflight: Preflight | None = None
    """Called by the session once the run is prepared and holds the card, before anything is
    opened or written (CI makes the card's branch here). Its `RunRefused` ends the run as every
    refusal does; its notes are logged and shown after the run's start."""
    trust: TrustAsker | None = None
    """Asks the user whether to trust the repository with what its config asks for
    (trust/consent.py): the terminal, the editor. None: an untrusted repository is refused."""
    trusted: bool = False
    """The front end's explicit trust: `--trust-repository`, the demo's own repository."""
    review: str | None = None
    """The review this run continues from (`run --ci --from-review`), as one rejection reason:
    given to the model after the card (`board/pullreview.py`)."""
    read_text: Callable[[Path], Awaitable[str | None]] | None = None
    """Where `read_file` takes the text of a file the path guard allowed (an ACP client's open
    buffers, acp/clientside.py); None, or a run in a worktree: the disk's."""


class RunRefused(Exception):
    """A run cannot start (already running, no API key, resume unavailable …); str() says why."""


MISSING_KEY = (
    "ANTHROPIC_API_KEY is not set. Set it (and ANTHROPIC_BASE_URL for another Messages-API "
    "endpoint) in the environment cardrunner runs in, or play a transcript without a key: "
    "--replay TRANSCRIPT.json, or `replay` in cardrunner.toml (docs/transcripts.md)."
)
"""The one wording of the missing-key refusal, for the CLI and the editor alike."""


def has_credentials(env: Mapping[str, str]) -> bool:
    """True when the SDK will find a key or token in `env`."""
    return any(env.get(name) for name in SECRET_ENV_VARS)


def require_key(env: Mapping[str, str]) -> None:
    if not has_credentials(env):
        raise RunRefused(MISSING_KEY)


def replay_path(settings: Settings, root: Path, card_path: Path) -> Path | None:
    """`settings.replay` as the transcript for this card: the file itself, or `<dir>/<stem>.json`."""
    if not settings.replay:
        return None
    path = Path(settings.replay)
    path = path if path.is_absolute() else root / path
    folder = path.is_dir() or (not path.exists() and not path.suffix)  # a folder not made yet
    return path / f"{card_path.stem}.json" if folder else path


def transcript_of(options: RunOptions) -> Path | None:
    return options.replay or replay_path(options.settings, options.root, options.card_path)


def refuse_early(options: RunOptions) -> None:
    """The checks that need no file or network, so an editor command can refuse at once."""
    api = options.settings.endpoint.provider == "anthropic"  # Bedrock, Vertex: their own
    if api and options.model is None and transcript_of(options) is None:
        require_key(options.env)
