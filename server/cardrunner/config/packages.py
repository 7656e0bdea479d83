"""Which package of a monorepo a card belongs to, and the settings its run has there.

A monorepo keeps one repository and many packages, each with its own build and tests (pnpm/npm/
yarn workspaces, Cargo and uv workspaces). The root's `cardrunner.toml` declares them as
`[packages.NAME]` with a `path` (and a package folder's own `cardrunner.toml` may set its
`[commands]` and `[paths] write`, config/settingsfiles.py). A card belongs to a package when its
front matter says `package: NAME`, or when the write area the settings give covers files of one
package only. Its run then has that package's commands, run in the package's folder — where
`npm test` finds the package's `package.json` and, up the tree, the root's hoisted
`node_modules` and shared configs, since the workspace stays the whole repository — and the
package's write area. The baseline, the test-count guard, the runner's checks and the model's
tools all read `Settings.commands`, so choosing the package once, before the run is built, is
what makes every one of them use the package's commands.

A card must never be tested with another package's commands (they would pass or fail on code
the card did not touch), so what cannot be decided is refused with words, before anything runs:
a package the settings do not declare, a package with neither build nor test, a card of no
package whose write area spans several while the root has no commands of its own.

Plain functions over the settings' values: the idle language server reads a card's package from
the same front matter without loading the settings' model.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models' instances are passed in; this module loads no pydantic
    from cardrunner.config.settings import Package, Settings

INHERITED = ("timeout_seconds", "app_wait_seconds", "test_args")
"""What a package's `[commands]` takes from the root's when it does not set it: how long, and
which test options the model may pass — never a command, which would test the wrong package."""


class PackageRefused(ValueError):
    """The card's package cannot be decided, or has nothing to test it with; str() says why."""


@dataclass(frozen=True)
class Declared:
    """What deciding a card's package needs of one package: its folder and whether it has a
    build or test command. The run's `Package` and the idle server's view give the same."""

    path: str
    runs: bool


@dataclass(frozen=True)
class PackageChoice:
    """The package a card's run belongs to (None: the repository root) and its settings."""

    name: str | None
    path: str
    settings: Settings

    def describe(self) -> str:
        """`package web (packages/web)`, as the start line, `check` and the plan say it."""
        return shown(self.name, self.path)


def shown(name: str | None, path: str) -> str:
    """`package web (packages/web)`; the root for no package."""
    return "the repository root" if name is None else f"package {name} ({path})"


def covering(folders: Mapping[str, str], write: Sequence[str]) -> str | None:
    """The one package whose folder holds every path of `write`, else None."""
    found = {
        name for name, folder in folders.items() if write and all(_within(w, folder) for w in write)
    }
    return found.pop() if len(found) == 1 else None


def _within(path: str, folder: str) -> bool:
    norm = posixpath.normpath(path)
    return norm == folder or norm.startswith(folder.rstrip("/") + "/")


def decide(
    packages: Mapping[str, Declared], asked: str | None, write: Sequence[str], root_runs: bool
) -> str | None:
    """The card's package: the one it names, else the one its write area lies in; None for
    the root. PackageRefused when no package's commands (nor the root's) could test it."""
    if asked is not None and asked not in packages:
        declared = ", ".join(sorted(packages)) or "none"
        raise PackageRefused(
            f"the card names package {asked!r}, which cardrunner.toml does not declare "
            f'(its [packages]: {declared}); add [packages.{asked}] path = "…" or fix '
            "the card's `package:`"
        )
    name = asked or covering({n: p.path for n, p in packages.items()}, write)
    if name is None and packages and not root_runs:
        raise PackageRefused(
            f"the card names no package and its write area ({', '.join(write)}) is not "
            "inside one, and the repository root has no build or test command of its own; "
            f"add `package: NAME` to the card's front matter (one of: {', '.join(sorted(packages))})"
        )
    if name is not None and not packages[name].runs:
        path = packages[name].path
        raise PackageRefused(
            f"package {name!r} ({path}) has no build or test command, and a card is never "
            f"tested with another package's commands; add [packages.{name}.commands] to the "
            f"root's cardrunner.toml, or [commands] to {path}/cardrunner.toml"
        )
    return name


def choose_package(settings: Settings, asked: str | None) -> PackageChoice:
    """The package a card that names `asked` (or none) belongs to, with that package's
    commands and write area in its settings; PackageRefused when the card has none to test it."""
    declared = {
        name: Declared(p.path, bool(p.commands.build or p.commands.test))
        for name, p in settings.packages.items()
    }
    root_runs = bool(settings.commands.build or settings.commands.test)
    name = decide(declared, asked, settings.paths.write, root_runs)
    if name is None:
        return PackageChoice(None, ".", settings)
    package = settings.packages[name]
    return PackageChoice(name, package.path, package_settings(settings, package))


def said(settings: Settings, asked: str | None) -> tuple[str, str]:
    """(`package web (packages/web)`, "" for the root; why no package's commands could test
    a card that names `asked`, "" when one can): what `cardrunner check` says of a card."""
    try:
        chosen = choose_package(settings, asked)
    except PackageRefused as exc:
        return "", str(exc)
    return (chosen.describe() if chosen.name else ""), ""


def root_write(settings: Settings) -> list[str]:
    """The root's own write area as `check` judges it: none when packages are declared and the
    root's `[paths] write` was left at its default (every card then runs in a package's)."""
    unset = "write" not in settings.paths.model_fields_set
    return [] if settings.packages and unset else settings.paths.write


def package_problems(root: Path, settings: Settings) -> list[str]:
    """What `cardrunner check` says of the packages: a folder or write area that does not exist."""
    out: list[str] = []
    for name, package in sorted(settings.packages.items()):
        if not (root / package.path).is_dir():
            out.append(f"packages.{name}.path: the folder {package.path!r} does not exist")
            continue
        out += [
            f"packages.{name}.paths.write: {w!r} does not exist in {package.path}; create it "
            "or remove it"
            for w in package.paths.write
            if not (root / package.path / w).exists()
        ]
    return out


def each_package(settings: Settings) -> list[PackageChoice]:
    """The root (when it has commands, or there are no packages), then every package with
    its settings: what `cardrunner check --try` builds and tests, one after the other."""
    root = settings.commands.build or settings.commands.test or not settings.packages
    out = [PackageChoice(None, ".", settings)] if root else []
    return out + [
        PackageChoice(name, package.path, package_settings(settings, package))
        for name, package in sorted(settings.packages.items())
    ]


def package_write_areas(settings: Settings) -> list[str]:
    """Every package's write area, relative to the repository root (what the trust question
    reads the instruction files of, besides the root's)."""
    return [_joined(p.path, w) for p in settings.packages.values() for w in p.paths.write]


def _joined(folder: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(folder, path))


def package_settings(settings: Settings, package: Package) -> Settings:
    """`settings` with the package's commands (in its folder) and write area."""
    own = package.commands
    values = settings.commands.model_dump(include=set(INHERITED))
    values.update(own.model_dump(exclude_unset=True))
    values["folder"] = _joined(package.path, own.folder)
    commands = type(own).model_validate(values)
    write = [_joined(package.path, w) for w in package.paths.write]
    paths = settings.paths.model_copy(update={"write": write})
    return settings.model_copy(update={"commands": commands, "paths": paths})
