"""A card's own choices for its run, within what the user's settings allow.

A card may ask for a different model, a lower effort, fewer rounds, tokens or dollars; it can
never ask for more than the user's settings: a repository's card is not the user's wallet. What
goes beyond a cap is clamped to it, and the run's warnings say so. A budget the settings leave
off (0 or None) is the card's to set. The effort a card asks for is capped by the settings'
effort, or without one by the model's default (what a run would use anyway).
"""

from __future__ import annotations

from cardrunner.card.card import Card
from cardrunner.card.fields import EFFORTS, CardChoices
from cardrunner.config.model_table import MODELS
from cardrunner.config.settings import Limits, Settings


def known_model(settings: Settings, name: str) -> bool:
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


def apply_choices(settings: Settings, choices: CardChoices) -> tuple[Settings, list[str]]:
    """`settings` with `choices` applied within the user's caps, and what was clamped."""
    notes: list[str] = []
    update: dict[str, object] = {}
    if choices.model and choices.model != settings.model:
        if known_model(settings, choices.model):
            update["model"] = choices.model
        else:
            notes.append(f"the card asks for model {choices.model!r}, which the model table does "
                         f"not know; the run uses {settings.model}")  # fmt: skip
    limits, clamped = _limits(settings.limits, choices)
    notes += clamped
    update["limits"] = limits
    chosen = settings.model_copy(update=update)
    if choices.effort:
        cap = settings.options.effort or settings.model_spec(chosen.model).default_effort
        effort = choices.effort
        if cap in EFFORTS and EFFORTS.index(effort) > EFFORTS.index(cap):
            notes.append(f"the card asks for effort {effort}; your settings allow {cap}, so "
                         f"the run uses {cap}")  # fmt: skip
            effort = cap
        options = chosen.options.model_copy(update={"effort": effort})
        chosen = chosen.model_copy(update={"options": options})
    return chosen, notes


def _limits(limits: Limits, choices: CardChoices) -> tuple[Limits, list[str]]:
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
    return limits.model_copy(update=update), notes
