"""A monorepo's `[packages]`: what a package's own cardrunner.toml may set, which package a card
belongs to, the settings its run has there, and the trust question over every package's config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cardrunner.cli.check import settings_problems
from cardrunner.config.loading import load_settings
from cardrunner.config.packages import PackageRefused, choose_package, each_package
from cardrunner.config.paths import declared_package, find_root
from cardrunner.tools.commands import parse_problems
from cardrunner.trust.requests import fingerprint, requests

ROOT = """
[commands]
timeout_seconds = 42
[packages.web]
path = "packages/web/"
[packages.web.commands]
test = ["npm", "test"]
[packages.api]
path = "packages/api"
"""


def monorepo(tmp_path: Path, root: str = ROOT, api: str | None = None) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    for name in ("web", "api"):
        (tmp_path / "packages" / name / "src").mkdir(parents=True)
    (tmp_path / "cardrunner.toml").write_text(root)
    if api is not None:
        (tmp_path / "packages" / "api" / "cardrunner.toml").write_text(api)
    return tmp_path


def test_a_packages_own_file_sets_its_commands_and_write_area_and_nothing_else(
    tmp_path: Path,
) -> None:
    api = (
        'endpoint = { base_url = "http://127.0.0.1:9" }\nsandbox = { mode = "off" }\n'
        '[commands]\ntest = ["cargo", "test"]\n[paths]\nwrite = ["lib"]\nread = ["/"]\n'
        '[mcp.x]\ncommand = "x"\n'
    )
    settings, problems = load_settings(monorepo(tmp_path, api=api))
    shown = {f"{p.file}: {p.key}" for p in problems}
    assert shown == {
        f"packages/api/cardrunner.toml: {key}"
        for key in ("endpoint", "sandbox", "paths.read", "mcp")
    }, problems
    assert all("sets only [commands] and [paths] write" in p.message for p in problems)
    assert settings.sandbox.mode == "bwrap" and not settings.mcp and settings.paths.read == ["."]
    api_run = choose_package(settings, "api").settings
    assert api_run.commands.test == ["cargo", "test"] and api_run.paths.write == [
        "packages/api/lib"
    ]
    assert api_run.commands.folder == "packages/api"
    assert api_run.commands.timeout_seconds == 42  # the root's, not a command of its own


def test_a_card_belongs_to_the_package_it_names_or_the_one_its_write_area_lies_in(
    tmp_path: Path,
) -> None:
    root = ROOT.replace("[commands]", '[paths]\nwrite = ["packages/web/src/ui"]\n[commands]')
    settings, _ = load_settings(monorepo(tmp_path, root, api='[commands]\nbuild = ["make"]\n'))
    implied = choose_package(settings, None)
    assert implied.describe() == "package web (packages/web)"
    assert implied.settings.paths.write == ["packages/web/src"]
    assert implied.settings.commands.test == ["npm", "test"]
    named = choose_package(settings, "api")
    assert named.settings.commands.build == ["make"] and named.settings.commands.test is None
    assert [c.name for c in each_package(settings)] == ["api", "web"]  # the root has no commands


@pytest.mark.parametrize(
    ("root", "asked", "words"),
    [
        (ROOT, "api", "package 'api' (packages/api) has no build or test command"),
        (ROOT, "mobile", "the card names package 'mobile', which cardrunner.toml does not declare"),
        (ROOT, None, "the card names no package and its write area (src) is not inside one"),
    ],
)
def test_a_card_no_packages_commands_could_test_is_refused_with_words(
    tmp_path: Path, root: str, asked: str | None, words: str
) -> None:
    settings, _ = load_settings(monorepo(tmp_path, root))
    with pytest.raises(PackageRefused) as refused:
        choose_package(settings, asked)
    assert words in str(refused.value)


def test_a_repository_of_no_packages_is_the_root_with_its_own_commands(tmp_path: Path) -> None:
    (tmp_path / "cardrunner.toml").write_text('[commands]\ntest = ["pytest"]\n')
    settings, _ = load_settings(tmp_path)
    chosen = choose_package(settings, None)
    assert chosen.name is None and chosen.settings is settings
    mixed = monorepo(tmp_path / "m", ROOT.replace("timeout_seconds = 42", 'test = ["make", "all"]'))
    root_card = choose_package(load_settings(mixed)[0], None)  # the root's own commands
    assert root_card.name is None and root_card.settings.commands.test == ["make", "all"]


@pytest.mark.parametrize("path", ["..", "../other", "/etc", "a/../..", "."])
def test_a_packages_path_stays_below_the_repository_root(tmp_path: Path, path: str) -> None:
    toml = f'[packages.x]\npath = "{path}"\n[packages.x.commands]\ntest = ["t"]\n'
    (tmp_path / "cardrunner.toml").write_text(toml)
    settings, problems = load_settings(tmp_path)
    assert "x" not in settings.packages
    assert any(p.key.startswith("packages.x") for p in problems), problems


def test_a_package_file_linked_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    root = monorepo(tmp_path / "repo")
    (tmp_path / "elsewhere.toml").write_text('[commands]\ntest = ["evil"]\n')
    os.symlink(tmp_path / "elsewhere.toml", root / "packages" / "api" / "cardrunner.toml")
    settings, _ = load_settings(root)
    assert settings.packages["api"].commands.test is None


def test_running_inside_a_package_reads_the_whole_monorepo(tmp_path: Path) -> None:
    root = monorepo(tmp_path, api='[commands]\ntest = ["npm", "test"]\n')
    assert find_root(root / "packages" / "api") == root.resolve()
    assert find_root(root / "packages" / "api" / "src") == root.resolve()
    (root / "tools").mkdir()
    (root / "tools" / "cardrunner.toml").write_text("")  # not a declared package: its own root
    assert find_root(root / "tools") == (root / "tools").resolve()


def test_a_folder_is_known_as_a_package_only_below_the_root_that_declares_it(
    tmp_path: Path,
) -> None:
    """What the language server lifts an editor's folder by (lsp/core/config.py): a declared
    package's folder or one inside it, never a folder past the first `.git` up the tree, never
    a package whose path leads out of the declaring root."""
    root = monorepo(tmp_path / "repo")
    found = declared_package(root / "packages" / "web")
    assert found is not None
    assert (found.root, found.name) == (root.resolve(), "web")
    assert found.folder == (root / "packages" / "web").resolve()
    inside = declared_package(root / "packages" / "api" / "src")
    assert inside is not None and inside.name == "api"
    assert declared_package(root) is None  # the root itself holds .git
    assert declared_package(root / "packages") is None  # not a package
    (root / "packages" / "web" / ".git").mkdir()  # a repository of its own: its own root
    assert declared_package(root / "packages" / "web") is None
    # A folder above a repository cannot claim the repository's folders as its packages.
    outer = tmp_path / "outer"
    (outer / "inner" / ".git").mkdir(parents=True)
    (outer / "inner" / "pkg").mkdir()
    (outer / "cardrunner.toml").write_text('[packages.p]\npath = "inner/pkg"\n')
    assert declared_package(outer / "inner" / "pkg") is None
    (outer / "inner" / "cardrunner.toml").write_text('[packages.x]\npath = "../inner/pkg/.."\n')
    assert declared_package(outer / "inner" / "pkg") is None  # the root itself is no package


def test_the_trust_question_lists_every_packages_commands_and_follows_their_file(
    tmp_path: Path,
) -> None:
    root = monorepo(tmp_path, api='[commands]\ntest = ["npm", "test"]\n')
    asked = requests(root)
    assert [r.text for r in asked][:2] == [
        "package api (packages/api): test command: `npm test`",
        "package web (packages/web): test command: `npm test`",
    ]
    before = fingerprint(asked)
    (root / "packages" / "api" / "cardrunner.toml").write_text('[commands]\ntest = ["sh", "x"]\n')
    assert fingerprint(requests(root)) != before
    (root / "packages" / "web" / "src" / "AGENTS.md").write_text("Be brief.\n")
    instructions = [r for r in requests(root) if r.key == "agent.instructions"]
    assert instructions and "packages/web/src/AGENTS.md" in instructions[0].value


def test_problems_in_a_packages_output_name_the_repositorys_files(tmp_path: Path) -> None:
    source = tmp_path / "packages" / "web" / "src" / "a.ts"
    source.parent.mkdir(parents=True)
    source.write_text("x\n")
    output = "src/a.ts(1,2): error TS2304: Cannot find name 'x'.\n"
    found = parse_problems(output, tmp_path, cwd=tmp_path / "packages" / "web")
    assert [(p.path, p.line) for p in found] == [("packages/web/src/a.ts", 1)]
    assert parse_problems(output, tmp_path) == []  # from the root, no such file


def test_check_names_a_missing_package_folder_and_not_the_roots_unset_write_area(
    tmp_path: Path,
) -> None:
    root = monorepo(tmp_path, ROOT + '[packages.gone]\npath = "packages/gone"\n')
    (root / "packages" / "web" / "src").rmdir()
    (root / "cards").mkdir()
    out = "\n".join(settings_problems(root, load_settings(root)[0]))
    assert "packages.gone.path: the folder 'packages/gone' does not exist" in out, out
    assert "packages.web.paths.write: 'src' does not exist in packages/web" in out
    assert "paths.write: the folder 'src'" not in out  # the root's default: no card runs there
    (root / "cardrunner.toml").write_text('[paths]\nwrite = ["src"]\n' + ROOT)
    assert "paths.write: the folder 'src'" in "\n".join(
        settings_problems(root, load_settings(root)[0])
    )
