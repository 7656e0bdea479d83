"""A small npm-workspaces monorepo, as its users keep one: two packages with their own tests,
a devDependency hoisted into the root's `node_modules` (installed from the npm registry), a
script shared at the root, and cardrunner's `[packages]` (one package's commands in the root's
cardrunner.toml, the other's in its own folder's cardrunner.toml).

Every package's test script first appends its package's name to `marks` in the run's own folder
(`$CARDRUNNER_RUN_DIR`, which outlives a worktree) through the root's `scripts/mark.js`, so a
test can tell exactly which package's commands ran for which run, and that they found the
root's files. The install is made once per test session and copied for each test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.project import init_repo

SPRINTF_JS = "sha512-D9cPgkvLlV3t3IzL0D0YLvGA9Ahk4PcvVwUbN0dSGr1aP0Nrt4AEnTUbuGvquEC0mA64Gqt1fzirlRs5ibXx8g=="
"""The registry's integrity of sprintf-js 1.0.3, the hoisted devDependency (npm checks the
download against the registry's; this pins which download that is)."""

ROOT_TOML = """
[packages.web]
path = "packages/web"

[packages.web.commands]
test = ["npm", "test"]

[packages.api]
path = "packages/api"
"""

API_TOML = """
[commands]
test = ["npm", "test"]
"""

GREET = "const { sprintf } = require('sprintf-js');\n\nexports.greet = (name) => sprintf('Hello, %s?', name);\n"
GREET_FIXED = GREET.replace("?", "!")
SUM = "exports.sum = (a, b) => a - b;\n"
SUM_FIXED = "exports.sum = (a, b) => a + b;\n"

MARK = """const fs = require('fs');
const path = require('path');
// the run's own folder (it outlives a worktree); the mark fails the script without one
fs.appendFileSync(path.join(process.env.CARDRUNNER_RUN_DIR, 'marks'), process.argv[2] + '\\n');
"""

WEB_TEST = """const test = require('node:test');
const assert = require('node:assert');
const { greet } = require('../src/greet');

test('greets with an exclamation mark', () => assert.strictEqual(greet('Ann'), 'Hello, Ann!'));
test('greets anyone', () => assert.match(greet('Bo'), /Bo/));
"""

API_TEST = """const test = require('node:test');
const assert = require('node:assert');
const { sum } = require('../src/sum');

test('adds', () => assert.strictEqual(sum(2, 3), 5));
"""

CARD = """---
title: {title}
state: New
package: {package}
---
{body}

**Acceptance criteria**

- {criterion}
- The tests pass.
"""


def _package(name: str) -> dict[str, object]:
    return {
        "name": f"@mono/{name}",
        "version": "1.0.0",
        "private": True,
        "scripts": {"test": f"node ../../scripts/mark.js {name} && node --test"},
    }


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def install(template: Path) -> Path:
    """The monorepo's files with `npm install` run in its root (the registry's sprintf-js 1.0.3
    hoisted into `node_modules`); skipped outside CI when the registry cannot be reached."""
    root_package = {
        "name": "mono",
        "private": True,
        "workspaces": ["packages/*"],
        "devDependencies": {"sprintf-js": "1.0.3"},
    }
    _write(
        template,
        {
            "package.json": json.dumps(root_package, indent=2),
            "packages/web/package.json": json.dumps(_package("web"), indent=2),
            "packages/api/package.json": json.dumps(_package("api"), indent=2),
            "scripts/mark.js": MARK,
        },
    )
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"],
        cwd=template, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        if os.environ.get("CI"):
            raise RuntimeError(f"npm install failed: {proc.stderr[-2000:]}")
        pytest.skip(f"npm install failed (the registry cannot be reached?): {proc.stderr[-300:]}")
    lock = json.loads((template / "package-lock.json").read_text())
    installed = lock["packages"]["node_modules/sprintf-js"]
    assert installed["integrity"] == SPRINTF_JS, installed  # pinned: these exact bytes
    assert (template / "node_modules" / "sprintf-js").is_dir(), "sprintf-js was not hoisted"
    assert not (template / "packages" / "web" / "node_modules" / "sprintf-js").exists()
    return template


def make_monorepo(template: Path, root: Path, extra_toml: str = "") -> Path:
    """A fresh git repository of the installed monorepo, with two cards, committed."""
    shutil.copytree(template, root, symlinks=True)
    _write(
        root,
        {
            ".gitignore": "node_modules/\n",
            "cardrunner.toml": extra_toml + ROOT_TOML,
            "packages/api/cardrunner.toml": API_TOML,
            "packages/web/src/greet.js": GREET,
            "packages/web/test/greet.test.js": WEB_TEST,
            "packages/api/src/sum.js": SUM,
            "packages/api/test/sum.test.js": API_TEST,
            "cards/web-greeting.md": CARD.format(
                title="The greeting asks instead of greeting", package="web",
                body="`greet('Ann')` says `Hello, Ann?`.",
                criterion="`greet('Ann')` returns `Hello, Ann!`.",
            ),
            "cards/api-sum.md": CARD.format(
                title="sum subtracts", package="api", body="`sum(2, 3)` returns -1.",
                criterion="`sum(2, 3)` returns 5.",
            ),
        },
    )  # fmt: skip
    init_repo(root, "a monorepo with two packages")
    return root


def marks(root: Path, run: str = "*") -> list[str]:
    """The packages whose test script ran for the run `run` (a run id; default: every run)."""
    files = sorted((root / ".cardrunner" / "runs").glob(f"{run}/marks"))
    return [name for path in files for name in path.read_text().split()]
