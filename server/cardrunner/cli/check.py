"""`cardrunner check`: the editor's validation, the commands and folders, and a trial run (`--try`).

`cardrunner check` prints the same validation the editor shows, as lines for a terminal or CI,
and then what valid TOML still gets wrong in the commands and folders. Each of those passes the
settings model and fails only later, in a run, with an exit status that says little: a build
program that is not installed, a whole shell line in one argument (`["npm test && npm run
lint"]`, which no shell ever reads), a write or read folder that does not exist, a write area
that lets the model change its own card or cardrunner's config, a replay transcript that is not
there. Checked here the way a run would see them: programs on the run's PATH (cardrunner's
interpreter first), folders relative to the workspace.

`cardrunner check --try` builds and tests once, on the untouched tree, under the run's sandbox.
A config can be valid and still fail every run: the sandbox refuses a write the toolchain needs,
the test command counts nothing the runner can read. Trying it costs one build and one test run,
exactly as a run's baseline would do them (same sandbox, same environment, same argv), and
prints what a run would start from: the checks' results, the tests counted, and every write the
sandbox refused, with the setting that fixes it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import get_args

from cardrunner.agent.events import ChecksRan
from cardrunner.board.order import load_board, resolve
from cardrunner.card.card import MAX_CARD_BYTES, Card, card_key, find_cards, parse_card
from cardrunner.cli.exiting import EXIT_DONE, EXIT_FAILED, EXIT_USAGE, Subparsers
from cardrunner.config.loading import load_settings, repository_settings, user_settings
from cardrunner.config.packages import each_package, package_problems, root_write, said
from cardrunner.config.paths import StatePaths, escapes, find_root
from cardrunner.config.readfile import read_regular
from cardrunner.config.settings import Settings, TestRunner
from cardrunner.config.settingsfiles import secret_refusal
from cardrunner.processes.bwrapprobe import probe
from cardrunner.processes.groups import ProcessGroups
from cardrunner.processes.refusal import refusals
from cardrunner.processes.sandbox import SandboxUnavailable, describe
from cardrunner.run.choices import choice_problems
from cardrunner.run.liveness import live_cards
from cardrunner.run.workarea import command_env, run_sandbox
from cardrunner.tools.mcp.readiness import server_problems
from cardrunner.verify.builds import RunnerChecks, counting, not_counted

_SHELL_RE = re.compile(r"&&|\|\||[|;<>`]|\$\(")
OWN_CONFIG = ("cardrunner.toml", ".mcp.json")


def _shell_line(arg: str) -> bool:
    """One argument that a shell would have split: spaces and an operator, or a program name
    with spaces in it."""
    return bool(re.search(r"\s", arg)) and bool(_SHELL_RE.search(arg))


def _argv_problems(name: str, argv: list[str], root: Path, path: str) -> list[str]:
    shown = " ".join(argv)
    if not argv:
        return [f"commands.{name}: empty; remove it or give the program and its arguments"]
    if any(_shell_line(arg) for arg in argv) or re.search(r"\s", argv[0]):
        return [
            f"commands.{name}: {argv!r} is a shell line in one argument; commands run "
            "without a shell, so give one argument per word, e.g. "
            f"{shown.split('&&')[0].split()!r} (for several commands, a script in the "
            "repository)"
        ]
    program = argv[0]
    if "/" in program:
        found = (root / program).is_file() and os.access(root / program, os.X_OK)
    else:
        found = shutil.which(program, path=path) is not None
    if found:
        return []
    return [
        f"commands.{name}: the program {program!r} is not found"
        + (" in the repository" if "/" in program else " on the run's PATH")
        + "; install it, or name it by its path"
    ]


def _inside(folder: str, other: str) -> bool:
    """Whether root-relative `other` lies inside root-relative `folder` (or is it)."""
    a, b = Path(os.path.normpath(folder)), Path(os.path.normpath(other))
    return a == Path(".") or b == a or b.is_relative_to(a)


def command_problems(root: Path, settings: Settings) -> list[str]:
    """Programs that do not exist and shell lines, for build, test and app; MCP servers that
    cannot start in a run (tools/mcp/readiness.py)."""
    path = command_env(root)["PATH"]
    out: list[str] = []
    commands = settings.commands
    for name, argv in (("build", commands.build), ("test", commands.test), ("app", commands.app)):
        if argv is not None:
            out += _argv_problems(name, argv, root, path)
    network = settings.sandbox.network
    for name, server in sorted(settings.mcp.items()):
        out += server_problems(name, server, root, path, network)
    return out


def folder_problems(root: Path, settings: Settings) -> list[str]:
    """Paths that do not exist; a write area holding the cards or cardrunner's config."""
    out = [
        f"paths.{kind}: the folder {folder!r} does not exist; create it or remove it"
        for kind, folders in (("write", root_write(settings)), ("read", settings.paths.read))
        for folder in folders
        if (root / folder).resolve().is_relative_to(root.resolve()) and not (root / folder).exists()
    ]  # a file is a write area too, as a Go module at the root lists its files (the guard agrees)
    for folder in settings.paths.write:
        held = [settings.cards + "/"] if _inside(folder, settings.cards) else []
        held += [name for name in OWN_CONFIG if _inside(folder, name)]
        if held:
            out.append(
                f"paths.write: {folder!r} lets the model change {' and '.join(held)}; a run "
                "must not edit its own card or cardrunner's settings: list the source folders "
                'instead (e.g. write = ["src", "tests"])'
            )
    if settings.replay and not (root / settings.replay).exists():
        out.append(
            f"replay: {settings.replay!r} does not exist; write the transcript there "
            "(docs/transcripts.md) or remove `replay`"
        )
    return out


async def _checks(root: Path, settings: Settings, run_dir: Path) -> ChecksRan:
    sandbox = run_sandbox(settings, root, root, run_dir)
    env = command_env(run_dir)
    checks = RunnerChecks(root, settings.commands, ProcessGroups(), env, sandbox=sandbox)
    return await checks.run("baseline", "untouched")


_HOW_TO_COUNT = (
    "name the runner in [commands] test_runner (one of "
    + ", ".join(get_args(TestRunner))
    + "), or a JUnit file the test command writes in [commands] test_report "
    "(docs/configuration.md)"
)


def try_config(root: Path, settings: Settings) -> tuple[list[str], list[str]]:
    """(what the try found, the problems among it) for the workspace at `root`."""
    if not (settings.commands.build or settings.commands.test):
        return ["try: no build or test command configured: nothing to try"], []
    StatePaths(root).ensure()
    with tempfile.TemporaryDirectory(prefix="check-", dir=StatePaths(root).state) as tmp:
        try:
            ran = asyncio.run(_checks(root, settings, Path(tmp)))
        except SandboxUnavailable as exc:
            return [], [f"try: {exc}"]
    found: list[str] = []
    problems: list[str] = []
    for check in ran.checks:
        state = "ok" if check.ok else f"failed (exit {check.exit_code})"
        line = f"try: {check.kind} ({' '.join(check.argv)}): {state}"
        if check.kind == "test" and check.tests_ran is not None:
            line += f", {check.tests_ran} tests ran"
        elif check.kind == "test":
            line += ", tests not counted"
            found.insert(0, f"try: {not_counted(check.uncounted)}; {_HOW_TO_COUNT}")
        (found if check.ok else problems).append(line)
        if not check.ok and check.tail:
            problems += [f"try:   {tail}" for tail in check.tail.splitlines()[-3:]]
        problems += [f"try: {check.kind}: {refusal}" for refusal in refusals(check.tail, root)]
    return found, problems


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
) -> tuple[list[str], list[str]]:
    """(the card's package, as `check` says it; the card's problems)."""
    if (why := escapes(path, root)) is not None:  # a link to another repository: never read
        return [], [f"{shown}:1: error: {why}"]
    try:
        text = read_regular(path, MAX_CARD_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [f"{shown}: cannot read: {exc}"]
    card, problems = parse_card(text, path)
    out = [f"{shown}:{p.line + 1}: {p.severity}: {p.message}" for p in problems]
    seen: list[str] = []
    if card is not None:
        out += _choices(card, shown, settings, board, root)
        package, refused = said(settings, card.choices.package)
        seen = [f"{shown}: {package}"] * bool(package)
        line = card.choices.lines.get("package", card.title_line) + 1
        out += [f"{shown}:{line}: error: {refused}"] * bool(refused)
    in_work = card is not None and card.state == "In Work"
    if in_work and card_key(path, root) not in live_cards(root):
        out.append(
            f"{shown}:1: warning: interrupted — the card is In Work but no run is going on; "
            f"resume with `cardrunner run {shown} --resume` or set its state back"
        )
    return seen, out


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
    out += [f"{shown}: {line}" for line in widening(root)]
    # What would refuse every run (a thinking setting the model rejects, a cost limit without a
    # price), in the very words the run would use.
    out += [f"{shown}/cardrunner.toml: {why}" for why in settings.refusals()]
    wrong = [*command_problems(root, settings), *folder_problems(root, settings)]
    out += [f"{shown}/cardrunner.toml: {why}" for why in wrong + package_problems(root, settings)]
    box = settings.sandbox
    if box.mode == "bwrap" and not probe(box.network).ok:
        out.append(f"{shown}: {describe(box.mode, box.network)}")
    if not (root / settings.cards).is_dir():
        out.append(
            f"{shown}: cards: the cards folder {settings.cards!r} does not exist; create it "
            "with a card (see the README) or set `cards` in cardrunner.toml"
        )
    return out


def widening(root: Path) -> list[str]:
    """What the repository's config would widen or leak: read paths outside it, limits it
    switches off, secrets it asks for its MCP servers (docs/security.md)."""
    repo, mine = repository_settings(root), user_settings(root)
    out = [
        f"paths.read: {folder!r} is outside the repository; the model could read files "
        "outside it (a run asks for your trust first)"
        for folder in repo.paths.read
        if _outside(root, folder)
    ]
    yours = mine.limits.model_dump()
    for key, value in repo.limits.model_dump().items():
        if key in repo.limits.model_fields_set and not value and yours[key]:
            out.append(
                f"limits.{key}: the repository switches this limit off (yours: {yours[key]}); "
                "a run asks for your trust first"
            )
    for name, server in sorted(repo.mcp.items()):
        out += [f"mcp.{name}: {secret_refusal(use)}" for use in server.secret_uses()]
    return out


def check_paths(paths: list[Path], trying: bool = False) -> tuple[list[str], list[str]]:
    """(what `--try` found, every problem) of the given cards, folders and their workspace
    settings, one per line; `trying` builds and tests each workspace once under its sandbox."""
    out: list[str] = []
    found: list[str] = []
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
            for each in each_package(settings) if trying else []:  # a package's own commands
                where = f"{root.name or root}: " + (f"{each.describe()}: " if each.name else "")
                tried, refused = try_config(root, each.settings)
                found += [where + line for line in tried]
                out += [where + line for line in refused]
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
            real = Path(os.path.realpath(card))  # a link loop stays as it is, never raises
            shown = (
                str(real.relative_to(Path.cwd())) if real.is_relative_to(Path.cwd()) else str(card)
            )
            seen, wrong = _card_problems(card, shown, root, settings, board)
            found, out = found + seen, out + wrong
    return found, out


def sandbox_modes(paths: list[Path]) -> list[str]:
    """The sandbox mode in force for each workspace of `paths`, and how its tests are counted,
    one line each."""
    roots = dict.fromkeys(find_root(p) for p in paths if p.exists())
    out = []
    for root in roots:
        settings = load_settings(root)[0]
        box = settings.sandbox
        out.append(f"{root.name or root}: {describe(box.mode, box.network)}")
        out += [f"{root.name or root}: {line}" for line in counting(settings.commands)]
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
    check.add_argument(
        "--try",
        dest="trying",
        action="store_true",
        help="also build and test once on the untouched tree under the run's sandbox, and "
        "print the tests counted and any write the sandbox refused",
    )
    check.add_argument(
        "--endpoint",
        action="store_true",
        help="ask the model's endpoint what it can do (a few small requests), keep the answer "
        "in your cardrunner folder and print it (docs/endpoints.md)",
    )
    check.set_defaults(verb=run)


def run(args: argparse.Namespace) -> int:
    """Print every problem of the given paths; the exit status says whether there were any."""
    paths = args.paths or [Path.cwd()]
    if getattr(args, "endpoint", False):  # callers that build the namespace may leave it out
        return check_endpoint(find_root(paths[0].resolve()))
    found, problems = check_paths(paths, args.trying)
    first = [line for line in found if "try: tests not counted" in line]
    for line in dict.fromkeys(
        [*first, *sandbox_modes(paths), *found, *problems]
    ):  # an unusable sandbox: once; uncounted tests first
        print(line)
    if not problems:
        print("no problems found")
    if any(not path.exists() for path in paths):
        return EXIT_USAGE
    return EXIT_FAILED if problems else EXIT_DONE


def check_endpoint(root: Path) -> int:
    """`check --endpoint`: probe the settings' model at its endpoint, keep and print the
    profile; exit 1 when a run could not work there (no tool round trip, no known window)."""
    from cardrunner.config.model_table import MODELS
    from cardrunner.models.endpoint import endpoint_of, keep_profile, probe, probed_kind

    settings = load_settings(root)[0]
    where = endpoint_of(settings.endpoint, os.environ)
    if not probed_kind(where):
        print(f"{where} is described by the model table; nothing to ask ({settings.model})")
        return EXIT_DONE
    profile = asyncio.run(probe(where, settings.model))
    keep_profile(profile, os.environ)
    for line in profile.lines():
        print(line)
    own = settings.models.get(settings.model)
    told = own is not None and "context_window" in own.model_fields_set
    if not profile.tools:
        print(f"problem: no tool-use round trip with {settings.model}; cardrunner cannot run it")
    elif not (profile.context_window or told or settings.model in MODELS):
        print(f"problem: set [models.{settings.model}] context_window; the server does not tell it")
    else:
        return EXIT_DONE
    return EXIT_FAILED
