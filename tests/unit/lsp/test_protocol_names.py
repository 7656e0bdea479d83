"""Every name of cardrunner's LSP surface is spelled alike by the server, the clients and the docs.

The server's `lsp/core/protocolnames.py` is the one source: the VS Code client mirrors the names
once, in client-vscode/src/protocol.ts (no other client module spells one), the stand-in server
of the client's e2e speaks only those names, and docs/lsp-extensions.md documents each of them and
no other. A name renamed on one side only fails here, not in an editor.
"""

from __future__ import annotations

import re
from pathlib import Path

from cardrunner.lsp.core import protocolnames as names

ROOT = Path(__file__).resolve().parents[3]
CLIENT_SRC = ROOT / "client-vscode" / "src"
PROTOCOL_TS = CLIENT_SRC / "protocol.ts"
FAKE_SERVER = ROOT / "client-vscode" / "test" / "fake_lsp_server.py"
DOCS = ROOT / "docs" / "lsp-extensions.md"

SERVER = {
    value
    for key, value in vars(names).items()
    if key.isupper() and isinstance(value, str) and value.startswith("cardrunner")
}
COMMANDS = set(names.COMMANDS)
METHODS = {n for n in SERVER if n.startswith("cardrunner/") and not n.endswith("/")}

LITERAL = re.compile(r"""["'](cardrunner[./][\w./]*)["']""")
COMMAND_LIKE = re.compile(r"(?<![\w./])cardrunner\.(?:debug\.[a-z]+|[a-z]+[A-Z]\w*)")
"""A command id in prose: `cardrunner.` and a camelCase verb (not `cardrunner.toml`)."""
METHOD_LIKE = re.compile(r"(?<![\w./])cardrunner/[A-Za-z]+\b(?!/)")
"""A custom method in prose (not `.cardrunner/runs/…`, not the progress token's prefix)."""


def literals(path: Path) -> set[str]:
    return set(LITERAL.findall(path.read_text(encoding="utf-8")))


def server_commands_in_protocol_ts() -> set[str]:
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    found = re.search(r"export const ServerCommand = \{(.*?)\} as const;", text, re.DOTALL)
    assert found, "protocol.ts declares the server's commands as `ServerCommand`"
    return set(LITERAL.findall(found.group(1)))


def test_the_server_spells_each_name_once() -> None:
    values = [v for k, v in vars(names).items() if k.isupper() and isinstance(v, str) and "/" in v]
    assert len(values) == len(set(values))
    assert len(COMMANDS) == len(names.COMMANDS)
    assert {
        names.BOARD,
        names.RUN_SUMMARY,
        names.RUN_STATUS,
        names.REVIEW_REQUESTED,
    } == METHODS, "a new custom method belongs in docs/lsp-extensions.md and protocol.ts as well"


def test_the_vscode_client_mirrors_the_names_in_protocol_ts_alone() -> None:
    assert server_commands_in_protocol_ts() <= COMMANDS
    assert {n for n in literals(PROTOCOL_TS) if n.startswith("cardrunner/")} == METHODS
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    for option in (names.WANTS_NOTIFICATIONS, names.NATIVE_REVIEW):
        assert f"{option}: true" in text, f"the client says {option} at initialize"
    elsewhere = {
        path.name: sorted(n for n in literals(path) if n in SERVER or n.startswith("cardrunner/"))
        for path in CLIENT_SRC.glob("*.ts")
        if path != PROTOCOL_TS
    }
    assert {file: found for file, found in elsewhere.items() if found} == {}


def test_the_stand_in_server_speaks_only_the_servers_names() -> None:
    spoken = literals(FAKE_SERVER)
    assert {n for n in spoken if n.startswith("cardrunner/")} <= METHODS
    assert {n for n in spoken if COMMAND_LIKE.fullmatch(n)} <= COMMANDS
    assert f'"{names.NATIVE_REVIEW}"' in FAKE_SERVER.read_text(encoding="utf-8")


def test_the_docs_name_every_command_and_method_and_no_other() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in sorted(SERVER):
        assert f"`{name}" in text, f"docs/lsp-extensions.md does not document {name}"
    for option in (names.WANTS_NOTIFICATIONS, names.NATIVE_REVIEW):
        assert f'"{option}": true' in text, f"docs/lsp-extensions.md does not explain {option}"
    assert set(COMMAND_LIKE.findall(text)) <= COMMANDS
    assert set(METHOD_LIKE.findall(text)) <= METHODS


def test_the_patterns_find_what_they_look_for() -> None:
    """The checks above compare sets; these make sure the sets are not empty by mistake."""
    assert COMMAND_LIKE.findall("run `cardrunner.acceptChanges` or cardrunner.debug.index") == [
        "cardrunner.acceptChanges",
        "cardrunner.debug.index",
    ]
    assert COMMAND_LIKE.findall("`cardrunner.toml` and .cardrunner.x") == []
    assert METHOD_LIKE.findall("`cardrunner/board`, .cardrunner/runs/x, cardrunner/run/<id>") == [
        "cardrunner/board"
    ]
    assert server_commands_in_protocol_ts() >= {names.RUN, names.ACCEPT}
