"""Loading the settings: where each value comes from and which wins, in-process or in a child.

`Settings` (settings.py) says what a setting is; this module reads the user's own config.toml,
the repository's files and the overrides, and says where each value comes from and which wins:
defaults, then the user's own folder, then `pyproject.toml [tool.cardrunner]`,
`cardrunner.toml` and `.mcp.json`, then the overrides of a command line or an editor — where a
repository can only tighten what the user set (precedence.py). It never raises: each problem is
returned with the file and key it came from, and defaults fill in.

`python -m cardrunner.config.loading` validates the settings in a process of their own. The
language server reads its settings through this child (lsp/core/config.py), at start and at
every change, so pydantic — the `Settings` model's validation, ~11 MiB resident — is loaded in a
process that exits, not in the idle server. Standard input: `{"root": …, "overrides": …}`;
standard output: `{"settings": Settings.dump(), "problems": [the problems as shown]}` — exactly
what `load_settings` returns, as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cardrunner.config.paths import default_cards, user_config_path
from cardrunner.config.precedence import user_wins
from cardrunner.config.settings import (
    Settings,
)
from cardrunner.config.settingsfiles import SettingsProblem, deep_merge, repository_data, user_data


def _loc_key(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def _validate(data: dict[str, Any], file: str, problems: list[SettingsProblem]) -> Settings:
    """Validate; on errors drop each offending key (falling back to its default) and retry."""
    for _ in range(50):
        try:
            return Settings.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                loc = tuple(err["loc"])
                expected = err["msg"]
                if err["type"] == "unexpected_keyword_argument":  # a price: a dataclass's word
                    expected = "Extra inputs are not permitted"  # for what a model calls this
                got = err.get("input")
                shown = json.dumps(got, default=str)[:60] if err["type"] != "missing" else ""
                message = f"{expected}" + (f" (got {shown})" if shown else "")
                problems.append(SettingsProblem(file=file, key=_loc_key(loc), message=message))
                data = _drop(data, loc)
    return Settings()


def _drop(data: dict[str, Any], loc: tuple[Any, ...]) -> dict[str, Any]:
    if not loc:
        return {}
    head, rest = loc[0], loc[1:]
    if head not in data:
        return data
    out = dict(data)
    if not rest or not isinstance(out[head], dict):
        del out[head]
    else:
        out[head] = _drop(out[head], rest)
    return out


def load_settings(
    root: Path, overrides: dict[str, Any] | None = None
) -> tuple[Settings, list[SettingsProblem]]:
    """Read the workspace's settings. Never raises: problems are returned, defaults fill in.

    Later wins: the user's config.toml, the repository's files, the overrides; then every
    guarded value the user set (config.toml or overrides) is tightened by the repository's
    only (config/precedence.py)."""
    problems: list[SettingsProblem] = []
    user_raw = user_data(root, problems)
    repo_raw, file = repository_data(root, problems, user_raw)
    user = _validate(user_raw, str(user_config_path()), problems)
    repo = _validate(repo_raw, file, problems)
    user_set, repo_set = user.model_dump(exclude_unset=True), repo.model_dump(exclude_unset=True)
    both = deep_merge(user_set, repo_set)
    both.setdefault("cards", default_cards(root))  # `cards/`, or a Backlog.md board's tasks
    settings = _validate(both, file, problems)
    if overrides:
        merged = deep_merge(settings.model_dump(exclude_unset=True), overrides)
        settings = _validate(merged, "overrides", problems)
    mine_set = deep_merge(user_set, overrides or {})
    mine = _validate(mine_set, "overrides", [])  # its problems are reported above
    settings, widened = user_wins(settings, mine, mine_set, repo, repo_set, root)
    return settings, problems + widened


def repository_settings(root: Path) -> Settings:
    """What the repository's own files set, on the defaults alone (what the trust question
    is about); problems are `load_settings`'s to report."""
    problems: list[SettingsProblem] = []
    data, file = repository_data(root, problems, user_data(root, problems))
    return _validate(data, file, problems)


def user_settings(root: Path) -> Settings:
    """The user's own config.toml on the defaults (what a repository is compared with)."""
    return _validate(user_data(root, []), str(user_config_path()), [])


def has_clash(problems: list[SettingsProblem]) -> bool:
    """A name clash between `.mcp.json` and the TOML settings is a configuration error."""
    return any(p.file == ".mcp.json" and "also defined" in p.message for p in problems)


def main() -> None:
    asked = json.loads(sys.stdin.read())
    settings, problems = load_settings(Path(asked["root"]), asked.get("overrides") or None)
    answer = {"settings": settings.dump(), "problems": [str(p) for p in problems]}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
