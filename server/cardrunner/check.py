"""`cardrunner check`: the same validation the editor shows, as lines for a terminal or CI."""

from __future__ import annotations

from pathlib import Path

from cardrunner.cards import find_cards, parse_card
from cardrunner.settings import load_settings


def _card_problems(path: Path, shown: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{shown}: cannot read: {exc}"]
    _, problems = parse_card(text, path)
    return [f"{shown}:{p.line + 1}: {p.severity}: {p.message}" for p in problems]


def check_paths(paths: list[Path]) -> list[str]:
    """Every problem in the given cards, folders and their workspace settings, one per line."""
    from cardrunner.cli import find_root

    out: list[str] = []
    seen_roots: set[Path] = set()
    for path in paths:
        if not path.exists():
            out.append(f"{path}: no such file or folder")
            continue
        root = find_root(path)
        if root not in seen_roots:
            seen_roots.add(root)
            settings, problems = load_settings(root)
            out += [f"{root.name or root}/{p}" for p in problems]
        else:
            settings, _ = load_settings(root)
        if path.is_file():
            cards = [path]
        elif path.resolve() == root:
            cards = find_cards(root, settings.cards)
        else:
            cards = find_cards(path, ".")
        for card in cards:
            try:
                shown = str(card.resolve().relative_to(Path.cwd()))
            except ValueError:
                shown = str(card)
            out += _card_problems(card, shown)
    return out
