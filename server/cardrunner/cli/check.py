"""`cardrunner check`: the same validation the editor shows, as lines for a terminal or CI."""

from __future__ import annotations

import argparse
from pathlib import Path

from cardrunner.card.card import MAX_CARD_BYTES, Card, find_cards, parse_card
from cardrunner.card.depends import load_board, resolve
from cardrunner.cli.exiting import EXIT_DONE, EXIT_FAILED, EXIT_USAGE, Subparsers
from cardrunner.cli.root import find_root
from cardrunner.config.readfile import read_regular
from cardrunner.config.settings import Settings, load_settings
from cardrunner.processes.sandbox import describe, probe
from cardrunner.run.choices import choice_problems
from cardrunner.run.liveness import live_cards


def _choices(
    card: Card, shown: str, settings: Settings, board: list[Card], root: Path
) -> list[str]:
    """A card's model and effort against the model table, its budgets against the settings'
    caps, and dependencies that name no card."""
    lines = card.choices.lines
    out = [
        f"{shown}:{lines.get(key, card.title_line) + 1}: {'error' if key else 'warning'}: {message}"
        for key, message in choice_problems(settings, card.choices)
    ]
    for named in card.depends_on:
        if resolve(named, card, board, root, settings.cards) is None:
            out.append(f"{shown}:1: error: depends_on: {named!r} is no card (a path or a title)")
    return out


def _card_problems(
    path: Path, shown: str, root: Path, settings: Settings, board: list[Card]
) -> list[str]:
    try:
        text = read_regular(path, MAX_CARD_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{shown}: cannot read: {exc}"]
    card, problems = parse_card(text, path)
    out = [f"{shown}:{p.line + 1}: {p.severity}: {p.message}" for p in problems]
    if card is not None:
        out += _choices(card, shown, settings, board, root)
    if card is not None and card.state == "In Work":
        try:
            rel = str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            rel = str(path)
        if rel not in live_cards(root):
            out.append(
                f"{shown}:1: warning: interrupted — the card is In Work but no run is going on; "
                f"resume with `cardrunner run {shown} --resume` or set its state back"
            )
    return out


def _outside(root: Path, folder: str) -> bool:
    resolved = (root / folder).resolve()
    return not resolved.is_relative_to(root.resolve())


def settings_problems(root: Path, settings: Settings) -> list[str]:
    """What valid-looking settings still get wrong: each would fail or mislead a run later."""
    shown = root.name or str(root)
    out = [
        f"{shown}/cardrunner.toml: paths.write: {folder!r} is outside the repository; "
        "a run can only write and commit inside it"
        for folder in settings.paths.write
        if _outside(root, folder)
    ]
    # What would refuse every run (a thinking setting the model rejects, a cost limit without a
    # price), in the very words the run would use.
    out += [f"{shown}/cardrunner.toml: {why}" for why in settings.refusals()]
    box = settings.sandbox
    if box.mode == "bwrap" and not probe(box.network).ok:
        out.append(f"{shown}: {describe(box.mode, box.network)}")
    if not (root / settings.cards).is_dir():
        out.append(
            f"{shown}: cards: the cards folder {settings.cards!r} does not exist; create it "
            "with a card (see the README) or set `cards` in cardrunner.toml"
        )
    return out


def check_paths(paths: list[Path]) -> list[str]:
    """Every problem in the given cards, folders and their workspace settings, one per line."""
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
            out += settings_problems(root, settings)
        else:
            settings, _ = load_settings(root)
        if path.is_file():
            cards = [path]
        elif path.resolve() == root:
            cards = find_cards(root, settings.cards)
        else:
            cards = find_cards(path, ".")
        board = load_board(root, settings.cards)
        for card in cards:
            try:
                shown = str(card.resolve().relative_to(Path.cwd()))
            except ValueError:
                shown = str(card)
            out += _card_problems(card, shown, root, settings, board)
    return out


def sandbox_modes(paths: list[Path]) -> list[str]:
    """The sandbox mode in force for each workspace of `paths`, one line each."""
    roots = dict.fromkeys(find_root(p) for p in paths if p.exists())
    out = []
    for root in roots:
        box = load_settings(root)[0].sandbox
        out.append(f"{root.name or root}: {describe(box.mode, box.network)}")
    return out


def add_parser(sub: Subparsers) -> None:
    """Register `check` and its paths."""
    check = sub.add_parser(
        "check",
        help="validate cards and configuration, print problems",
        epilog="Exit status: 0 no problems, 1 problems were printed (errors or warnings), "
        "2 a path does not exist.",
    )
    check.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="cards, folders of cards or workspace roots (default: the current folder)",
    )
    check.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Print every problem of the given paths; the exit status says whether there were any."""
    paths = args.paths or [Path.cwd()]
    problems = check_paths(paths)
    for line in [*sandbox_modes(paths), *problems]:
        print(line)
    if not problems:
        print("no problems found")
    if any(not path.exists() for path in paths):
        return EXIT_USAGE
    return EXIT_FAILED if problems else EXIT_DONE
