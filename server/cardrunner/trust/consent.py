"""The one rule, for every front end: a run starts only in a repository the user trusts with
exactly what its config asks for.

`ensure_trusted` is called by every run's preparation (run/prepare.py), before anything of the
repository runs or is read beyond its settings. Nothing asked (no commands, servers, widened
settings): nothing to trust. A grant with the same fingerprint: trusted. The front end's
explicit trust (`cardrunner run --trust-repository`, the demo's own repository) or
`CARDRUNNER_TRUST=1` in the environment (CI): trusted, nothing stored. Otherwise the front end's
`TrustAsker` asks the user once (the terminal, the editor through the language server); a yes is
stored (trust/grants.py), anything else refuses the run with the list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cardrunner.trust import grants as store

TRUST_ENV = "CARDRUNNER_TRUST"
"""`CARDRUNNER_TRUST=1`: trust every repository (CI, throwaway machines)."""


@dataclass(frozen=True)
class TrustQuestion:
    """What the user is asked: the repository, what its config asks for, and whether a
    different config was trusted before."""

    root: Path
    items: list[str]
    fingerprint: str
    changed: bool = False

    def text(self) -> str:
        """The question's one wording, for the terminal and the editor alike."""
        head = (
            f"The cardrunner settings of {self.root} changed since you trusted them."
            if self.changed
            else f"cardrunner has not run in {self.root} before."
        )
        lines = "".join(f"\n  • {item}" for item in self.items)
        return f"{head} Its config asks for:{lines}\nTrust this repository and run?"

    def refusal(self) -> str:
        """Why the run does not start, with the same list and how to trust."""
        lines = "; ".join(self.items)
        why = "its config changed since you trusted it" if self.changed else "it is not trusted"
        return (
            f"{self.root}: {why}, and its config asks for: {lines}. Review and "
            f"trust it with `cardrunner trust {self.root}` (or answer the question on a "
            "terminal or in the editor); CI passes --trust-repository or CARDRUNNER_TRUST=1"
        )


class TrustAsker(Protocol):
    """A front end's way of asking the user (True: trusted)."""

    async def ask(self, question: TrustQuestion) -> bool: ...


class Untrusted(Exception):
    """The repository is not trusted; str() says what it asks for and how to trust it."""


def question(root: Path) -> TrustQuestion | None:
    """The question for `root` as its config stands now; None when nothing needs trust
    (nothing asked, or a grant of exactly these settings)."""
    from cardrunner.trust.requests import fingerprint, requests  # reads the settings: not idle

    asked = requests(root)
    if not asked:
        return None
    mark = fingerprint(asked)
    granted = store.lookup(root)
    if granted is not None and granted.fingerprint == mark:
        return None
    return TrustQuestion(root, [r.text for r in asked], mark, changed=granted is not None)


async def ensure_trusted(
    root: Path, env: Mapping[str, str], asker: TrustAsker | None, trusted: bool = False
) -> None:
    """Return once `root` is trusted; raise Untrusted with the list otherwise."""
    if trusted or env.get(TRUST_ENV) == "1":
        return
    asked = await asyncio.to_thread(question, root)
    if asked is None:
        return
    if asker is None or not await asker.ask(asked):
        raise Untrusted(asked.refusal())
    await asyncio.to_thread(store.grant, root, asked.fingerprint, asked.items)
