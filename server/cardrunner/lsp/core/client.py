"""The editor as the server sees it (options, capabilities, requests, log), file URIs, tasks.

Some clients answer a server→client request with `null`, an error, or never (pygls then never
resolves the future). Every request therefore goes through `Client.request`, which checks
nothing is sent that the client did not announce, waits at most `timeout` seconds and forgets
the request afterwards, so a silent client costs a log line, not a hung run or a leak.

A `file:` URI becomes the resolved path the index keys cards by (`uri_to_path`). The module
imports only pygls and lsprotocol: the server needs it to answer `initialize` (the workspace
root), before the card index and its parsers are loaded.

Work the server starts and does not await goes through `spawn`: each task is kept until it is
done. asyncio keeps only a weak reference to a task, so a task nobody holds may be collected
before it ends. Commands (which must answer at once, features/commands.py), document events and
start-up all spawn their longer work through here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from cardrunner.lsp.core.protocolnames import CLIENT_OPTIONS, NATIVE_REVIEW, WANTS_NOTIFICATIONS

log = logging.getLogger("cardrunner.lsp")

REQUEST_TIMEOUT = 10.0
"""Seconds for showDocument, applyEdit, configuration and the like."""


CUSTOM_PREFIX = "cardrunner/"


@dataclass(frozen=True)
class ClientOptions:
    """What a client says about itself in `initializationOptions["client"]`."""

    notifications: bool = False
    """Send the optional `cardrunner/*` notifications (docs/lsp-extensions.md)."""
    native_review: bool = False
    """The client shows a review itself, from `cardrunner/reviewRequested` (`"nativeReview":
    true`, which needs the notifications): the server then neither opens the review's `.diff`
    nor asks its question; the commands, lenses and code actions decide as for anyone."""


def split_client_options(init_options: Any) -> tuple[ClientOptions, Any]:
    """The client's own options, and the rest (the settings overrides) without them.
    Anything malformed under `client` is ignored: it only switches conveniences on."""
    if not isinstance(init_options, dict) or CLIENT_OPTIONS not in init_options:
        return ClientOptions(), init_options
    rest = {k: v for k, v in init_options.items() if k != CLIENT_OPTIONS}
    own = init_options[CLIENT_OPTIONS]
    if not isinstance(own, dict):
        return ClientOptions(), rest
    notifications = own.get(WANTS_NOTIFICATIONS) is True
    native = notifications and own.get(NATIVE_REVIEW) is True
    return ClientOptions(notifications=notifications, native_review=native), rest


class Client:
    """Thin wrapper over the pygls server for everything that goes to the client."""

    def __init__(self, server: LanguageServer) -> None:
        self._ls = server
        self.options = ClientOptions()
        """What the client said of itself at `initialize` (initializationOptions `client`)."""

    @property
    def custom_notifications(self) -> bool:
        """The client asked for `cardrunner/*` notifications (initializationOptions
        `{"client": {"notifications": true}}`). Off by default: clients that do not know
        them show a warning per message (lsp-mode opens a *Warnings* window each time)."""
        return self.options.notifications

    @property
    def native_review(self) -> bool:
        """The client shows reviews itself; the server's generic review UI stays back."""
        return self.options.native_review

    @property
    def caps(self) -> types.ClientCapabilities:
        return self._ls.client_capabilities

    def _capable(self, *path: str) -> bool:
        """The client capability at `path` (e.g. "window", "work_done_progress") is set."""
        node: Any = self.caps
        for name in path:
            node = getattr(node, name, None)
        return bool(node)

    @property
    def supports_progress(self) -> bool:
        return self._capable("window", "work_done_progress")

    @property
    def supports_show_document(self) -> bool:
        return self._capable("window", "show_document", "support")

    @property
    def supports_lens_refresh(self) -> bool:
        return self._capable("workspace", "code_lens", "refresh_support")

    @property
    def supports_configuration(self) -> bool:
        return self._capable("workspace", "configuration")

    @property
    def supports_apply_edit(self) -> bool:
        return self._capable("workspace", "apply_edit")

    @property
    def supports_document_changes(self) -> bool:
        return self._capable("workspace", "workspace_edit", "document_changes")

    @property
    def position_encoding(self) -> str:
        encoding: Any = self._ls.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or "utf-16")

    async def request(
        self, method: str, params: Any, seconds: float | None = REQUEST_TIMEOUT
    ) -> Any:
        """Send a request and wait at most `seconds` (None: until the caller cancels).

        Raises TimeoutError, or the client's error (e.g. `JsonRpcMethodNotFound`)."""
        protocol = self._ls.protocol
        msg_id = f"cardrunner-{uuid.uuid4()}"
        future = protocol.send_request(method, params, msg_id=msg_id)
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.wrap_future(future)
        finally:
            # pygls keeps unanswered requests forever (pygls#608): forget this one.
            protocol._request_futures.pop(msg_id, None)
            protocol._result_types.pop(msg_id, None)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification; a custom `cardrunner/*` one only to a client that asked."""
        if method.startswith(CUSTOM_PREFIX) and not self.custom_notifications:
            return
        self._ls.protocol.notify(method, params)

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self._ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

    async def show_document(self, uri: str, *, take_focus: bool = True) -> bool:
        """Open `uri` in the editor if the client can; False when it cannot or did not."""
        if not self.supports_show_document:
            return False
        try:
            result = await self.request(
                types.WINDOW_SHOW_DOCUMENT,
                types.ShowDocumentParams(uri=uri, take_focus=take_focus),
            )
        except Exception as exc:
            log.info("showDocument %s was not answered: %r", uri, exc)
            return False
        return bool(result is not None and getattr(result, "success", False))

    def refresh_code_lenses(self) -> None:
        """Ask the client to re-request lenses (if it can); never waits for the answer."""
        if not self.supports_lens_refresh:
            return
        task = asyncio.ensure_future(self._refresh())
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def _refresh(self) -> None:
        try:
            await self.request(types.WORKSPACE_CODE_LENS_REFRESH, None)
        except Exception as exc:
            log.debug("codeLens/refresh failed: %r", exc)

    def forget_finished_requests(self) -> None:
        """Drop finished entries pygls leaves behind for notifications (measured leak)."""
        futures = self._ls.protocol._request_futures
        for key in [k for k, f in futures.items() if f.done()]:
            futures.pop(key, None)


_background: set[asyncio.Future[None]] = set()


class ClientLogHandler(logging.Handler):
    """Sends cardrunner's log records to the client as `window/logMessage` (never stdout)."""

    LEVELS: ClassVar[dict[int, types.MessageType]] = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, server: LanguageServer) -> None:
        super().__init__(logging.INFO)
        self._ls = server
        self.loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        kind = self.LEVELS.get(record.levelno, types.MessageType.Log)
        if record.levelno >= logging.ERROR:
            kind = types.MessageType.Error
        params = types.LogMessageParams(type=kind, message=self.format(record))
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is self.loop:
            self._send(params)
        elif self.loop is not None and not self.loop.is_closed():
            # A worker thread or the runs' loop: the transport belongs to the server's loop.
            self.loop.call_soon_threadsafe(self._send, params)
        elif running is not None:  # before `initialized`: only the server's loop exists
            self._send(params)

    def _send(self, params: types.LogMessageParams) -> None:
        with contextlib.suppress(Exception):  # the client is gone; stderr has the record
            self._ls.window_log_message(params)


def setup_logging(server: LanguageServer) -> ClientLogHandler:
    """cardrunner's records go to stderr and to the client; stdout carries JSON-RPC only."""
    root = logging.getLogger("cardrunner")
    root.setLevel(logging.INFO)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    client = ClientLogHandler(server)
    client.setFormatter(logging.Formatter("%(message)s"))
    root.handlers = [stderr, client]
    root.propagate = False
    return client


def uri_to_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


T = TypeVar("T")

_tasks: set[asyncio.Future[Any]] = set()


def spawn(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run `coro` in the background, keeping a strong reference until it is done; the task is
    returned for a caller that must later wait for it (a read that must see this write)."""
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task
