"""What the idle language server reads of the settings, as plain values: `SettingsView`.

The settings are validated by the one `Settings` model (settings.py), in a child process when
the language server reads them (config/loading.py), so an idle server never loads pydantic (its
~11 MiB; bench/RESULTS.md, idle memory). What the server reads between runs — the cards
folder, the sandbox, the limits a resume grants from, and what the cost forecast needs — is this
view, built from the model's JSON dump (`Settings.dump`). It states no setting of its own: each
field is the model's field of the same name, type and default, which
tests/unit/config/test_view.py checks, so the two cannot drift apart. A run validates the dump
again into a whole `Settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any, Literal, TypeVar

from cardrunner.config.model_table import ModelSpec, Price, model_spec
from cardrunner.config.packages import Declared, PackageRefused, decide, shown


@dataclass(frozen=True, kw_only=True)
class LimitsView:
    """`[limits]`: the budgets a card's choices are clamped to and a forecast is capped by."""

    max_rounds: int = 60
    max_tokens: int = 400_000
    max_cost_usd: float | None = 2.0


@dataclass(frozen=True, kw_only=True)
class PathsView:
    """`[paths]`: where the project's instruction files are looked for (the write area)."""

    write: list[str] = field(default_factory=lambda: ["src"])


@dataclass(frozen=True, kw_only=True)
class CommandsView:
    """`[commands]`: whether the root has commands of its own (a card of no package needs them)."""

    build: list[str] | None = None
    test: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class OptionsView:
    """`[options]`: the effort a card's own effort is capped by."""

    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


@dataclass(frozen=True, kw_only=True)
class AgentView:
    """`[agent]`: whether, and how much of, the project's instructions a run's prompt holds."""

    project_instructions: bool = True
    instructions_max_bytes: int = 16_384


@dataclass(frozen=True, kw_only=True)
class SandboxView:
    """`[sandbox]`: the mode the editor's status describes."""

    mode: Literal["bwrap", "off"] = "bwrap"
    network: bool = False


@dataclass(frozen=True, kw_only=True)
class SettingsView:
    """The settings the idle server reads; `from_dump` of `Settings.dump()`."""

    model: str = "claude-sonnet-5-5"
    cards: str = "cards"
    limits: LimitsView = field(default_factory=LimitsView)
    paths: PathsView = field(default_factory=PathsView)
    commands: CommandsView = field(default_factory=CommandsView)
    packages: dict[str, Declared] = field(default_factory=dict)
    """`[packages.NAME]`: each package's folder and whether it has commands (the lens and the
    board say which package a card belongs to, config/packages.py)."""
    options: OptionsView = field(default_factory=OptionsView)
    agent: AgentView = field(default_factory=AgentView)
    sandbox: SandboxView = field(default_factory=SandboxView)
    prices: dict[str, Price] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """`[models.NAME]`: only the fields set (`ModelOverride.changes`), read back as values."""

    @classmethod
    def from_dump(cls, dump: Mapping[str, Any]) -> SettingsView:
        """The view of a validated model's `Settings.dump()` (JSON: dates are text)."""
        return cls(
            model=dump["model"],
            cards=dump["cards"],
            limits=_part(LimitsView, dump["limits"]),
            paths=_part(PathsView, dump["paths"]),
            commands=_part(CommandsView, dump["commands"]),
            packages={name: _declared(p) for name, p in dump["packages"].items()},
            options=_part(OptionsView, dump["options"]),
            agent=_part(AgentView, dump["agent"]),
            sandbox=_part(SandboxView, dump["sandbox"]),
            prices={name: Price.of(price) for name, price in dump["prices"].items()},
            models={name: _override(o) for name, o in dump["models"].items()},
        )

    def price(self, model: str | None = None) -> Price | None:
        """As `Settings.price`: the settings' price of `model` first, then the table's."""
        name = model or self.model
        return self.prices.get(name) or self.model_spec(name).price

    def model_spec(self, model: str | None = None) -> ModelSpec:
        """As `Settings.model_spec`: the table's entry with what `[models.NAME]` sets."""
        name = model or self.model
        return model_spec(name, self.models.get(name))

    def package(self, asked: str | None) -> tuple[str, str]:
        """As `config.packages.said`: (`package web (packages/web)`, "" for the root; why no
        package's commands could test a card that names `asked`, "" when one can)."""
        root_runs = bool(self.commands.build or self.commands.test)
        try:
            name = decide(self.packages, asked, self.paths.write, root_runs)
        except PackageRefused as exc:
            return "", str(exc)
        return ("" if name is None else shown(name, self.packages[name].path)), ""


_Part = TypeVar("_Part", LimitsView, PathsView, CommandsView, OptionsView, AgentView, SandboxView)


def _part(cls: type[_Part], values: Mapping[str, Any]) -> _Part:
    """One table's view: the fields it has of the model's (the rest is for runs)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _declared(package: Mapping[str, Any]) -> Declared:
    """A `[packages.NAME]` dump as what deciding a card's package needs of it."""
    commands = package["commands"]
    return Declared(package["path"], bool(commands["build"] or commands["test"]))


def _override(values: Mapping[str, Any]) -> dict[str, Any]:
    """A `[models.NAME]` dump as `ModelSpec` values: the price a `Price`, the date a date."""
    out = dict(values)
    if isinstance(out.get("price"), dict):
        out["price"] = Price.of(out["price"])
    if isinstance(out.get("as_of"), str):
        out["as_of"] = date.fromisoformat(out["as_of"])
    return out
