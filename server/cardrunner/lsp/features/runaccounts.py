"""The live run view's text (`cardrunner/runSummary`), at the same cost in round 240 as in round 10.

VS Code asks for it again on every `cardrunner/runStatus`, several times a round. Told whole and
read from the whole log each time, the answer at round 240 was 20 times the one at round 10 and
the server parsed the entire log for every ask: the longer a run went, the more the editor and
the server worked per round (bench/client_cpu.py). So each log keeps one `Account` that reads
only what was appended, and while the run goes on the answer is its opening and the newest
`LIVE_LINES` lines — a live view is watched at its end, like `tail -f` — with one line saying how
many were left out and where the whole account is. A run that has ended is told whole, and a
client can ask for everything at any time (`"full": true`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from cardrunner.run.summary import Account

LIVE_LINES = 60
"""Newest lines of a live run's account in the answer: about 20 rounds of two tool calls."""
KEPT_LOGS = 16
"""Accounts kept (the logs asked for most recently); one more is read from the top again."""


class RunAccounts:
    """One up-to-date `Account` per recently asked log."""

    def __init__(self) -> None:
        self._accounts: OrderedDict[Path, Account] = OrderedDict()
        self._lock = threading.Lock()

    def text(self, log_path: Path, *, live: bool, full: bool = False) -> str:
        """The account of `log_path` as the run view shows it now. Blocking (it reads the log):
        call it off the event loop. Raises OSError or NotARunLog as `summarize_log` does."""
        account = self._account(log_path)
        account.update()
        return account.text(None if full or not live else LIVE_LINES)

    def _account(self, log_path: Path) -> Account:
        with self._lock:
            account = self._accounts.pop(log_path, None) or Account(log_path)
            self._accounts[log_path] = account
            while len(self._accounts) > KEPT_LOGS:
                self._accounts.popitem(last=False)
            return account
