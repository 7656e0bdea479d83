"""`python -m cardrunner.config.child`: the settings validated in a process of their own.

The language server reads its settings through this child (lsp/core/config.py), at start and
at every change, so pydantic — the `Settings` model's validation, ~11 MiB resident — is loaded
in a process that exits, not in the idle server. Standard input: `{"root": …, "overrides": …}`;
standard output: `{"settings": Settings.dump(), "problems": [the problems as shown]}` — exactly
what `load_settings` returns, as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cardrunner.config.loading import load_settings


def main() -> None:
    asked = json.loads(sys.stdin.read())
    settings, problems = load_settings(Path(asked["root"]), asked.get("overrides") or None)
    answer = {"settings": settings.dump(), "problems": [str(p) for p in problems]}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
