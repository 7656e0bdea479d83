"""The trust question in any editor: `window/showMessageRequest` with the list and two answers.

A run's worker asks (trust/consent.py, through the worker's pipe, workers/handle.py); this feature
asks the user. Only "Trust and run" is a yes: a dismissed question, a client that answers `null`,
one that cannot show the request or does not answer within `ASK_SECONDS` is a no, and the run
ends refused with the same list (the card is not touched). Two runs of one repository that ask at
once share one question. The VS Code client shows the request as a modal dialog (a notification
hides itself after seconds while the run waits), on top of VS Code's own Workspace Trust. Asking
is logged: a run that stays at round 0 says in the log what it waits for.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from cardrunner.lsp.core.client import Client
from cardrunner.trust.consent import TrustQuestion

log = logging.getLogger("cardrunner.lsp.trust")

TRUST = "Trust and run"
DONT = "Don't run"
ACTIONS = (DONT, TRUST)
"""The harmless answer first: it is what a plain Enter picks in some clients (Eglot)."""
ASK_SECONDS = 900.0
"""How long the question waits for the user before it counts as a no."""


class TrustPrompt:
    """`TrustAsker` for the language server: asks the editor's user."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._asking: dict[str, asyncio.Future[bool]] = {}

    async def ask(self, question: TrustQuestion) -> bool:
        pending = self._asking.get(question.fingerprint)
        if pending is None:
            pending = asyncio.ensure_future(self._ask(question))
            self._asking[question.fingerprint] = pending
            pending.add_done_callback(lambda _: self._asking.pop(question.fingerprint, None))
        return await asyncio.shield(pending)

    async def _ask(self, question: TrustQuestion) -> bool:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=question.text(),
            actions=[types.MessageActionItem(t) for t in ACTIONS],
        )
        log.info("asking the user to trust %s; the run waits for the answer", question.root)
        try:
            answer = await self._client.request(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params, seconds=ASK_SECONDS
            )
        except Exception as exc:
            log.info("the trust question was not answered (%r): the run is refused", exc)
            return False
        title = getattr(answer, "title", None)
        log.info("the trust question for %s was answered %r", question.root, title)
        return title == TRUST
