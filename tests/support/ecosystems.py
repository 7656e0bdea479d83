"""The real projects as a user sets them up: a fresh git repository, the cardrunner.toml the docs
give for its ecosystem (docs/configuration.md, "Your project"), a card and its transcripts.

Each ecosystem has three scripted changes: a harmless one (a doc comment) that must end Done, one
that deletes or skips a test (the runner's count must block it), and for Python one that breaks
the tests (a worktree run on the editable install must not end Done).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.project import final, init_repo, report, turn, use, write_transcript
from tests.support.realprojects import PINS, RegistryUnreachable, buildtools, fetch


@dataclass(frozen=True)
class Edit:
    """One scripted change: `old` → `new` in `path`, and the test output it leaves."""

    path: str
    old: str
    new: str
    tests_say: str
    """Text the test command prints after this change (cited as evidence)."""


@dataclass(frozen=True)
class Ecosystem:
    key: str
    gitignore: str
    toml: str
    """The cardrunner.toml of docs/configuration.md's "Your project" section."""
    topic: str
    done: Edit
    drop: Edit


PYTHON_TOML = """[paths]
write = ["src", "tests"]

[commands]
build = ["python", "-m", "compileall", "-q", "src"]
test = ["python", "-m", "pytest", "-q"]
"""
RUST_TOML = """[paths]
write = ["src", "tests"]

[commands]
build = ["cargo", "build", "--offline"]
test = ["cargo", "test", "--offline"]
"""
JS_TOML = """[paths]
write = ["src", "test"]

[commands]
test = ["npm", "test"]
"""
TS_TOML = """[paths]
write = ["src", "test"]

[commands]
build = ["npx", "tsc", "-b", "tsconfig.build.json"]
test = ["npm", "test"]
"""

PYTHON_IGNORES = (
    "__pycache__/\n.venv/\n.pytest_cache/\n*.egg-info/\ndist/\nsrc/exceptiongroup/_version.py\n"
)
"""As the project's own repository ignores them (its version file is written by the build)."""

MESSAGE = "    def message(self) -> str:\n        return self.args[0]"
CONTAINS = (
    "    /// as repeated flags: `-vvv` is treated the same as `-v -v -v`.\n    pub fn contains"
)
NO_ARGS = "#[test]\nfn no_args() {\n    let _ = Arguments::from_vec(to_vec(&[]));\n}\n\n"
CALLBACKS = '    it("should return formated strings for callbacks"'
NARROWS = "  it('narrows the type', () => {"

ECOSYSTEMS = {
    eco.key: eco
    for eco in (
        Ecosystem(
            "python", PYTHON_IGNORES, PYTHON_TOML,
            "ExceptionGroup.message",
            Edit(
                "src/exceptiongroup/_exceptions.py", MESSAGE,
                MESSAGE.replace("\n", '\n        """The message the group was made with."""\n'),
                "89 passed",
            ),
            Edit(
                "tests/test_catch.py", "def test_bad_arg():",
                '@pytest.mark.skip(reason="flaky")\ndef test_bad_arg():', "88 passed",
            ),
        ),
        Ecosystem(
            "rust", "/target\nCargo.lock\n", RUST_TOML, "Arguments::contains",
            Edit(
                "src/lib.rs", CONTAINS,
                CONTAINS.replace(
                    "    pub fn", "    ///\n    /// Returns `false` when no key is present.\n    pub fn"
                ),
                "46 passed",
            ),
            Edit("tests/tests.rs", NO_ARGS, "", "45 passed"),
        ),
        Ecosystem(
            "javascript", "node_modules/\n", JS_TOML, "sprintf",
            Edit(
                "src/sprintf.js", "    function sprintf() {",
                "    /** Formats its arguments as the format string says. */\n"
                "    function sprintf() {",
                "3 passing",
            ),
            Edit("test/test.js", CALLBACKS, CALLBACKS.replace("it(", "it.skip("), "2 passing"),
        ),
        Ecosystem(
            "typescript", "node_modules/\ndist/\ncoverage/\n*.tsbuildinfo\n", TS_TOML, "prefix",
            Edit(
                "src/tiny-invariant.ts", "const prefix: string",
                "/** Starts every message. */\nconst prefix: string", "5 passed",
            ),
            Edit("test/invariant.test.ts", NARROWS, "  it.skip('narrows the type', () => {", "4 passed"),
        ),
    )
}  # fmt: skip

BREAK_PYTHON = Edit(
    "src/exceptiongroup/_catch.py",
    "            elif unhandled is None:\n                return True",
    "            elif unhandled is None:\n                return False",
    "passed",
)
"""`catch()` re-raises what its handlers handled: many of the project's tests fail. (`catch` is
the package's own on every Python; its exception classes are the built-in ones on 3.11+, so a
change to `_exceptions.py` would not break a test there.)"""

GIVE_UP = final("The runner does not commit it.\nRESULT: failed: the runner refused the commit")
"""How a scripted model ends after the runner refused its commit (no more steps to play)."""

CARD = """---
title: Document {topic}
state: New
category: Improvement
---
{topic} has no documentation comment.

## Acceptance criteria

- {topic} has a documentation comment.
- The tests pass.
"""


PAGE_CHARS = 3500
"""Below read_file's cut (about 4000 characters a result), so every page is read whole."""


def _pages(text: str) -> list[tuple[int, int]]:
    """(start_line, max_lines) pages that together read all of `text`, none of them cut."""
    pages: list[tuple[int, int]] = []
    start, count, used = 1, 0, 0
    for line in text.splitlines(keepends=True):
        if count and used + len(line) > PAGE_CHARS:
            pages.append((start, count))
            start, count, used = start + count, 0, 0
        count, used = count + 1, used + len(line)
    return [*pages, (start, count)] if count else pages


def transcript(
    edit: Edit, topic: str, before: str, ending: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Read (`before` is the file's text, in pages), change, read back, test, report both
    criteria citing what the tools showed, commit."""
    reads = [use("read_file", path=edit.path, start_line=s, max_lines=n) for s, n in _pages(before)]
    line = before[: before.index(edit.old)].count("\n") + 1
    first = (edit.new or before[before.index(edit.old) + len(edit.old) :]).splitlines()[0]
    read_back = use("read_file", "toolu_read", path=edit.path, start_line=line, max_lines=4)
    return [
        turn(*reads),
        turn(use("write_file", path=edit.path, edit=[[edit.old, edit.new]])),
        turn(read_back, use("run_tests", "toolu_tests")),
        {
            **turn(
                report(1, "the comment is in the file", ("toolu_read", first)),
                report(2, f"the tests pass: {edit.tests_say}", ("toolu_tests", edit.tests_say)),
            ),
            "expect": [edit.tests_say],
        },
        turn(use("git_commit", message=f"card: Document {topic}")),
        ending or final(),
    ]


@dataclass(frozen=True)
class RealProject:
    """A fresh repository of one real project, set up for cardrunner."""

    eco: Ecosystem
    root: Path
    python: str
    """The interpreter that runs cardrunner there (a Python project's own virtualenv)."""

    @property
    def card(self) -> str:
        return "cards/document.md"

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CI"))}
        return subprocess.run(
            [self.python, "-m", "cardrunner", *args],
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def play(self, name: str, edit: Edit, ending: dict[str, Any] | None = None) -> Path:
        """A transcript beside the repository (not in it: the tree stays clean); its path."""
        folder = self.root.parent / f"{self.root.name}-transcripts"
        folder.mkdir(exist_ok=True)
        before = (self.root / edit.path).read_text()
        steps = transcript(edit, self.eco.topic, before, ending)
        return write_transcript(folder / f"{name}.json", steps)


def _link_tree(source: Path, target: Path) -> None:
    """Installed dependencies as hard links (fast, no copy), or a copy across file systems."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                raise
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


def _editable_venv(root: Path) -> str:
    """`.venv` with the project installed editable, as its users do; cardrunner and pytest come
    from the interpreter running these tests, the build backend from the fetch's cache."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=root, check=True)
    python = str(root / ".venv" / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "_shared.pth").write_text(
        f"import site; site.addsitedir({ours!r}); site.addsitedir({str(buildtools('python'))!r})\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--no-index",
            "--no-build-isolation",
            "--no-deps",
            "-e",
            ".",
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return python


def make_real_project(key: str, root: Path, extra_toml: str = "") -> RealProject:
    """The published project in a fresh git repository with cardrunner's files committed."""
    eco = ECOSYSTEMS[key]
    try:
        tree = fetch(key)
    except RegistryUnreachable as exc:
        if os.environ.get("CI"):  # .ci/run fetched them first: CI never skips these
            raise
        pytest.skip(f"the {PINS[key].registry} registry cannot be reached: {exc}")
    shutil.copytree(tree, root, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    if (tree / "node_modules").is_dir():
        _link_tree(tree / "node_modules", root / "node_modules")
    (root / ".gitignore").write_text(eco.gitignore)
    init_repo(root, f"{key}: the published project")
    (root / "cards").mkdir()
    (root / "cards" / "document.md").write_text(CARD.format(topic=eco.topic))
    (root / "cardrunner.toml").write_text(extra_toml + eco.toml)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "cardrunner: a card"], cwd=root, check=True)
    python = _editable_venv(root) if key == "python" else sys.executable
    return RealProject(eco, root, python)
