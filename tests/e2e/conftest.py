"""Fixtures for the language-server e2e tests: a workspace and a connected client.

`client` starts `python -m cardrunner lsp` for a fresh git workspace and initializes it with
VS Code's capabilities; parametrize it indirectly with "minimal" (no progress, no
showDocument, no applyEdit, no lens refresh, no configuration) or "null-show-document"
(VS Code capabilities, but showDocument is answered with null) or "refuses-edits"
(VS Code capabilities; the test decides whether applyEdit is applied) or "plain" (the
minimal capabilities, and no custom notifications asked for: Eglot, lsp-mode, Helix) or
"native-review" (VS Code capabilities, and it says it shows reviews itself, as the VS Code
client does). Every other profile asks for the `cardrunner/*` notifications.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.support.lsp import Editor, Project, make_project, server_config


@pytest.fixture
def lsp_project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "ws", f"cardrunner-test-{uuid.uuid4().hex[:12]}")


PLAIN = frozenset({"plain"})
"""Profiles of clients that know nothing of cardrunner: no `client` initializationOptions,
so no custom notifications (the test sees only the standard protocol)."""


def capabilities(profile: str) -> types.ClientCapabilities:
    if profile in ("minimal", "plain"):
        return types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(),
                code_lens=types.CodeLensClientCapabilities(),
            )
        )
    return client_capabilities("visual-studio-code")


def own_options(profile: str) -> dict[str, bool]:
    """initializationOptions["client"]: what a cardrunner-aware client says of itself."""
    if profile == "native-review":
        return {"notifications": True, "nativeReview": True}
    return {"notifications": True}


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, lsp_project: Project, request: Any) -> Any:
    project = lsp_project
    profile = getattr(request, "param", "vscode")
    editor = Editor(lsp_client, show_document_null=profile == "null-show-document")
    editor.register()
    lsp_client.editor = editor  # type: ignore[attr-defined]
    lsp_client.project = project  # type: ignore[attr-defined]
    lsp_client.profile = profile  # type: ignore[attr-defined]
    root = project.root.as_uri()
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(profile),
            root_uri=root,
            workspace_folders=[types.WorkspaceFolder(uri=root, name="ws")],
            initialization_options=None if profile in PLAIN else {"client": own_options(profile)},
        )
    )
    yield
    if editor.hold is not None:  # never leave a question hanging in the client
        editor.hold.set()
    if getattr(lsp_client, "shut_down", False):  # the test sent shutdown itself
        lsp_client.exit(None)
    else:
        await lsp_client.shutdown_session()
