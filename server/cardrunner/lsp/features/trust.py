"""The trust question in any editor: `window/showMessageRequest` with the list and two answers.

A run's worker asks (trust/gate.py, through the worker's pipe, workers/handle.py); this feature
asks the user. Only "Trust and run" is a yes: a dismissed question, a client that answers `null`,
one that cannot show the request or does not answer within `ASK_SECONDS` is a no, and the run
ends refused with the same list (the card is not touched). Two runs of one repository that ask at
once share one question. VS Code shows the request as a notification with buttons, on top of its
own Workspace Trust.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from cardrunner.lsp.core.client import Client
from cardrunner.trust.gate import TrustQuestion

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
        try:
            answer = await self._client.request(
                types.WINDOW_SHOW_MESSAGE_REQUEST, params, seconds=ASK_SECONDS
            )
        except Exception as exc:
            log.info("the trust question was not answered (%r): the run is refused", exc)
            return False
        return getattr(answer, "title", None) == TRUST
