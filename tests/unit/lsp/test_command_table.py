"""The handlers register the ids of `protocolnames.COMMANDS`; the features must carry out each.

The handlers are registered before `initialize` from the ids alone (the capabilities list them),
so a command whose method is missing would only fail when someone runs it.
"""

from __future__ import annotations

from cardrunner.lsp.core import protocolnames as names
from cardrunner.lsp.features.commands import COMMANDS


def test_every_registered_command_but_the_servers_own_has_a_method() -> None:
    assert len(set(names.COMMANDS)) == len(names.COMMANDS)
    assert set(COMMANDS) == set(names.COMMANDS) - {names.DEBUG_MODULES}
