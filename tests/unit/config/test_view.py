"""The idle server's `SettingsView` is the `Settings` model's, field for field: each of its
fields is the model's field of the same name, type and default, so the two cannot drift."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from pydantic import BaseModel

from cardrunner.config.loading import load_settings
from cardrunner.config.model_table import MODELS
from cardrunner.config.plainsettings import SettingsView
from cardrunner.config.settings import Settings

OWN_SHAPE = {"models", "packages"}
"""Fields whose view type differs on purpose: `[models.NAME]` is only what it sets,
`[packages.NAME]` only what deciding a card's package needs (`config.packages.Declared`)."""


def pairs(view: type[Any], model: type[BaseModel], where: str = "") -> list[tuple[str, Any, Any]]:
    """(path, the view's field type, the model's), walking the nested tables."""
    hints = get_type_hints(view)
    out = []
    for field in dataclasses.fields(view):
        path = where + field.name
        assert field.name in model.model_fields, f"{path} is not a setting"
        mine, theirs = hints[field.name], model.model_fields[field.name].annotation
        if dataclasses.is_dataclass(mine) and isinstance(theirs, type):
            out += pairs(mine, theirs, path + ".")
        elif field.name not in OWN_SHAPE:
            out.append((path, mine, theirs))
    return out


def test_every_view_field_is_a_setting_of_the_same_type() -> None:
    found = pairs(SettingsView, Settings)
    assert len(found) >= 12
    for path, mine, theirs in found:
        assert _plain(mine) == _plain(theirs), path


def test_the_views_defaults_are_the_models() -> None:
    assert SettingsView.from_dump(Settings().dump()) == SettingsView()


def _plain(annotation: Any) -> Any:
    """`int | None` written either way (the model's `Optional`s are unions too)."""
    if isinstance(annotation, types.UnionType):
        return frozenset(annotation.__args__)
    return annotation


@pytest.mark.parametrize("model", [*MODELS, "house-model"])
def test_the_view_prices_and_specs_as_the_model_does(tmp_path: Path, model: str) -> None:
    (tmp_path / "cardrunner.toml").write_text(
        'cards = "tasks"\n[limits]\nmax_rounds = 9\n[sandbox]\nmode = "off"\n'
        "[prices.house-model]\ninput = 1\noutput = 2\ncache_read = 0\ncache_write = 0\n"
        '[models.claude-haiku-4-5]\ndefault_effort = "low"\nas_of = 2026-01-02\n'
        "[models.claude-opus-5-5]\nprice = {input = 9, output = 9, cache_read = 0, cache_write = 0}\n"
    )
    settings, problems = load_settings(tmp_path)
    assert not problems
    view = SettingsView.from_dump(settings.dump())
    assert (view.cards, view.limits.max_rounds, view.sandbox.mode) == ("tasks", 9, "off")
    assert view.price(model) == settings.price(model)
    assert view.model_spec(model) == settings.model_spec(model)
