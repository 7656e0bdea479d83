"""The user's settings win: a repository can tighten what the user set, never widen it.

"The user" is everything the repository did not write: the user's own config.toml, the CLI's
flags and the editor's settings (the loader's overrides). For the settings that bound what a run
may do or cost — the limits, the sandbox's mode, network and passed variables, the read paths —
a value the user set is combined with the repository's by its rule in `GUARDED`: it may lower a
limit, never raise or switch it off; it may turn the sandbox on, never off. Prices work the same
way against the built-in price table: a repository may raise a model's price (its cost limit
then stops earlier), never lower it. Settings the user left at their defaults may be widened by a
repository only with the user's trust: the trust question lists them (trust/requests.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardrunner.config.model_table import MODELS, Price
from cardrunner.config.settingsfiles import SettingsProblem

if TYPE_CHECKING:
    from cardrunner.config.settings import Settings

Tighten = Callable[[Any, Any, Path], Any]


def _limit(user: Any, repo: Any, root: Path) -> Any:
    """The stricter of two limits; 0 or None means no limit at all."""
    if not user:
        return repo
    if not repo:
        return user
    return min(user, repo)


def _mode(user: str, repo: str, root: Path) -> str:
    return "bwrap" if "bwrap" in (user, repo) else user


def _network(user: bool, repo: bool, root: Path) -> bool:
    return user and repo


def _names(user: list[str], repo: list[str], root: Path) -> list[str]:
    return [n for n in repo if n in user]


def _read(user: list[str], repo: list[str], root: Path) -> list[str]:
    """The repository's read paths that lie inside one of the user's; else the user's."""
    allowed = [(root / u).resolve() for u in user]
    kept = [r for r in repo if any((root / r).resolve().is_relative_to(a) for a in allowed)]
    return kept or user


LIMITS = (
    "max_rounds",
    "max_tokens",
    "max_cost_usd",
    "max_consecutive_tool_errors",
    "max_wall_seconds",
)
"""Every field of `Limits` (a test keeps the two in step)."""

GUARDED: dict[tuple[str, str], Tighten] = {
    **{("limits", name): _limit for name in LIMITS},
    ("sandbox", "mode"): _mode,
    ("sandbox", "network"): _network,
    ("sandbox", "env"): _names,
    ("paths", "read"): _read,
}
"""Every setting a repository can only tighten once the user set it, with how it tightens."""


def _has(data: dict[str, Any], section: str, key: str) -> bool:
    table = data.get(section)
    if section == "sandbox" and isinstance(table, str):  # `sandbox = "off"`
        return key == "mode"
    return isinstance(table, dict) and key in table


def user_wins(
    settings: Settings,
    user: Settings,
    user_data: dict[str, Any],
    repo: Settings,
    repo_data: dict[str, Any],
    root: Path,
) -> tuple[Settings, list[SettingsProblem]]:
    """`settings` with every guarded value the user set tightened by the repository's only.

    `user`/`repo` are each side's settings on their own, `*_data` what each side wrote."""
    problems: list[SettingsProblem] = []
    for (section, key), tighten in GUARDED.items():
        if not (_has(user_data, section, key) and _has(repo_data, section, key)):
            continue
        mine, theirs = getattr(getattr(user, section), key), getattr(getattr(repo, section), key)
        final = tighten(mine, theirs, root)
        if final != theirs and not (tighten is _limit and theirs):  # a higher limit: no news
            problems.append(_ignored(f"{section}.{key}", theirs, mine))
        setattr(getattr(settings, section), key, final)
    prices, price_problems = _prices(user, repo, repo_data)
    if prices:
        settings = settings.model_copy(update={"prices": {**settings.prices, **prices}})
    return settings, problems + price_problems


def _prices(
    user: Settings, repo: Settings, repo_data: dict[str, Any]
) -> tuple[dict[str, Price], list[SettingsProblem]]:
    """The repository's prices, none below the user's or the built-in price of a model."""
    out: dict[str, Price] = {}
    problems: list[SettingsProblem] = []
    written = repo_data.get("prices")
    for name, theirs in repo.prices.items():
        if not isinstance(written, dict) or name not in written:
            continue
        floor = user.prices.get(name) or (MODELS[name].price if name in MODELS else None)
        if floor is None:
            continue
        raised = _at_least(theirs, floor)
        if raised != theirs:
            problems.append(_ignored(f"prices.{name}", theirs, floor))
        out[name] = raised
    return out, problems


def _plain(value: Any) -> Any:
    """A price (a dataclass) or a model as the dict it is shown as; a value as itself."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return value.model_dump() if hasattr(value, "model_dump") else value


def _ignored(key: str, theirs: Any, mine: Any) -> SettingsProblem:
    shown, kept = _plain(theirs), _plain(mine)
    return SettingsProblem(
        file="repository settings",
        key=key,
        message=f"{shown!r} would widen what you set or the built-in value ({kept!r}); "
        "a repository can only tighten it, so the stricter value applies",
    )


_RATES = ("input", "output", "cache_read", "cache_write")


def _at_least(theirs: Price, floor: Price) -> Price:
    """`theirs`, no rate below `floor`'s, and the floor's long-prompt tier kept: its threshold
    no higher, its rates no lower (a repository cannot price a long prompt as a short one)."""
    tier_at = [t for t in (theirs.above_tokens, floor.above_tokens) if t is not None]
    above = theirs.above if floor.above is None else floor.above
    if theirs.above is not None and floor.above is not None:
        above = _at_least(theirs.above, floor.above)
    return Price(
        **{name: max(getattr(theirs, name), getattr(floor, name)) for name in _RATES},
        above_tokens=min(tier_at) if tier_at else None,
        above=above,
    )
