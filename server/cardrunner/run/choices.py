"""A card's own choices for its run, within what the user's settings allow.

A card may ask for a different model, a lower effort, fewer rounds, tokens or dollars; it can
never ask for more than the user's settings: a repository's card is not the user's wallet. What
goes beyond a cap is clamped to it, and the run's warnings say so. A budget the settings leave
off (0 or None) is the card's to set. The effort a card asks for is capped by the settings'
effort, or without one by the model's default (what a run would use anyway).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, cast

from cardrunner.card.card import Card
from cardrunner.card.fields import EFFORTS, CardChoices
from cardrunner.config.model_table import MODELS, Effort, ModelSpec
from cardrunner.config.plainsettings import SettingsView

if TYPE_CHECKING:  # the model's instances are passed in: the forecast never loads pydantic
    from cardrunner.config.settings import Settings


class _Caps(Protocol):
    @property
    def max_rounds(self) -> int: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def max_cost_usd(self) -> float | None: ...


class _Effort(Protocol):
    @property
    def effort(self) -> Effort | None: ...


class Chooser(Protocol):
    """What the choices are clamped by: the `Settings` of a run, or the idle server's view."""

    @property
    def model(self) -> str: ...
    @property
    def models(self) -> Mapping[str, object]: ...
    @property
    def prices(self) -> Mapping[str, object]: ...
    @property
    def limits(self) -> _Caps: ...
    @property
    def options(self) -> _Effort: ...
    def model_spec(self, model: str | None = None) -> ModelSpec: ...


@dataclass
class Chosen:
    """What a card's choices change, within the caps, and a note for each clamp."""

    model: str
    limits: dict[str, float | int] = field(default_factory=dict)
    effort: str | None = None
    """One of EFFORTS (card/fields.py reads no other)."""
    notes: list[str] = field(default_factory=list)


def known_model(settings: Chooser, name: str) -> bool:
    """A model the model table, `[models.NAME]` or `[prices.NAME]` knows, or the settings' own."""
    return (
        name in MODELS
        or name in settings.models
        or name in settings.prices
        or (name == settings.model)
    )


def choice_problems(settings: Settings, choices: CardChoices) -> list[tuple[str, str]]:
    """What `cardrunner check` says about a card's choices: (key, message)."""
    out: list[tuple[str, str]] = []
    if choices.model and not known_model(settings, choices.model):
        known = ", ".join(sorted(MODELS))
        out.append(("model", f"model {choices.model!r} is not in the model table ({known}); "
                    f"add [models.{choices.model}] to cardrunner.toml"))  # fmt: skip
    model = choices.model if choices.model and known_model(settings, choices.model) else None
    if choices.effort:
        spec = settings.model_spec(model)
        why = spec.thinking_problem(
            model or settings.model, settings.options.thinking, choices.effort
        )
        if why:
            out.append(("effort", why))
    return out + [("", note) for note in apply_choices(settings, choices)[1]]


def card_settings(settings: Settings, card: Card) -> tuple[Settings, list[str]]:
    """`settings` with what `card` asks and may have, and a warning for each clamp."""
    return apply_choices(settings, card.choices)


def card_view(view: SettingsView, card: Card) -> SettingsView:
    """The idle server's view of the settings a run of `card` would have (its forecast)."""
    chosen = choose(view, card.choices)
    effort = cast("Effort | None", chosen.effort)  # one of EFFORTS, the Literal's values
    options = replace(view.options, effort=effort or view.options.effort)
    limits = replace(view.limits, **chosen.limits)  # type: ignore[arg-type]  # by name
    return replace(view, model=chosen.model, limits=limits, options=options)


def apply_choices(settings: Settings, choices: CardChoices) -> tuple[Settings, list[str]]:
    """`settings` with `choices` applied within the user's caps, and what was clamped."""
    chosen = choose(settings, choices)
    limits = settings.limits.model_copy(update=chosen.limits)
    out = settings.model_copy(update={"model": chosen.model, "limits": limits})
    if chosen.effort:
        options = out.options.model_copy(update={"effort": chosen.effort})
        out = out.model_copy(update={"options": options})
    return out, chosen.notes


def choose(settings: Chooser, choices: CardChoices) -> Chosen:
    """What `choices` change of `settings` within the user's caps (one rule for both)."""
    chosen = Chosen(settings.model)
    if choices.model and choices.model != settings.model:
        if known_model(settings, choices.model):
            chosen.model = choices.model
        else:
            chosen.notes.append(f"the card asks for model {choices.model!r}, which the model "
                                f"table does not know; the run uses {settings.model}")  # fmt: skip
    chosen.limits, clamped = _limits(settings.limits, choices)
    chosen.notes += clamped
    if choices.effort:
        cap = settings.options.effort or settings.model_spec(chosen.model).default_effort
        effort = choices.effort
        if cap in EFFORTS and EFFORTS.index(effort) > EFFORTS.index(cap):
            chosen.notes.append(f"the card asks for effort {effort}; your settings allow {cap}, "
                                f"so the run uses {cap}")  # fmt: skip
            effort = cap
        chosen.effort = effort
    return chosen


def _limits(limits: _Caps, choices: CardChoices) -> tuple[dict[str, float | int], list[str]]:
    """The run's budgets: the card's where it asks for less (or the settings set none)."""
    notes: list[str] = []
    update: dict[str, float | int] = {}
    for key, unit in (("max_rounds", "rounds"), ("max_tokens", "tokens"), ("max_cost_usd", "USD")):
        asked = getattr(choices, key)
        if asked is None:
            continue
        cap = getattr(limits, key)
        if cap and asked > cap:
            notes.append(f"the card asks for {key} = {asked:g}; your settings allow {cap:g} "
                         f"{unit}, so the run uses {cap:g}")  # fmt: skip
            continue
        update[key] = asked
    return update, notes
