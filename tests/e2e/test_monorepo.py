"""A monorepo as its users keep it, through the real CLI, the real SDK and the strict fake API
(issue 41, item 2): a card of one npm-workspaces package is built and tested with that
package's commands, in its folder, with the root's hoisted `node_modules` and shared scripts
readable, and ends Done; a card of the other package is tested with the other's commands only;
a card no package's commands could test is refused with words, before anything runs; and a
package's own cardrunner.toml runs nothing before the user's consent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.monorepo import (
    GREET_FIXED,
    SUM_FIXED,
    install,
    make_monorepo,
    marks,
)
from tests.support.project import cli, final, git, log_records, report, turn, use
from tests.support.trust import payload, ran, untrusted_env


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("monorepo-template"))


def fix(path: str, content: str, says: str) -> list[dict[str, Any]]:
    """Read, fix, test, report both criteria citing the test run, commit, done."""
    return [
        turn(use("read_file", path=path)),
        turn(use("write_file", path=path, content=content)),
        turn(use("run_tests", "toolu_tests")),
        turn(
            report(1, f"the package's tests pass: {says}", ("toolu_tests", says)),
            report(2, "the tests pass", ("toolu_tests", "Tests succeeded.")),
        ),
        turn(use("git_commit", message=f"card: fix {path}")),
        final(),
    ]


def run(root: Path, card: str, steps: list[dict[str, Any]]) -> tuple[int, str]:
    with FakeMessagesAPI(steps) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test-mono"}
        proc = cli(root, "run", card, "--yes", env=env, timeout=300)
    return proc.returncode, proc.stderr


def state(root: Path, card: str) -> str:
    return str(yaml.safe_load((root / card).read_text().split("---")[1])["state"])


@pytest.mark.parametrize("isolation", [False, True], ids=["checkout", "worktree"])
def test_each_package_card_is_tested_with_its_own_packages_commands_and_ends_done(
    template: Path, tmp_path: Path, isolation: bool
) -> None:
    root = make_monorepo(template, tmp_path / "mono", f"isolation = {str(isolation).lower()}\n")
    checked = cli(root, "check", "cards")
    assert checked.returncode == 0, checked.stdout  # no problem: the config is a monorepo's
    assert "cards/web-greeting.md: package web (packages/web)" in checked.stdout, checked.stdout
    assert "cards/api-sum.md: package api (packages/api)" in checked.stdout

    web = fix("packages/web/src/greet.js", GREET_FIXED, "# pass 2")
    status, stderr = run(root, "cards/web-greeting.md", web)
    assert status == 0, stderr
    assert "(cards/web-greeting.md, package web (packages/web)" in stderr
    assert state(root, "cards/web-greeting.md") == "Done"
    records = log_records(root)
    web_run = records[0]["data"]["run_id"]
    assert set(marks(root, web_run)) == {"web"}, "another package's commands tested the web card"
    assert len(marks(root, web_run)) >= 3  # the baseline, the model's run_tests, the runner's
    checks = [r["data"] for r in records if r["type"] == "checks"]
    assert checks[-1]["ok"] and checks[-1]["tests_ran"] == 2, checks[-1]
    assert "packages/web/src/greet.js" in git(root, "show", "--stat", "HEAD~1")

    api = fix("packages/api/src/sum.js", SUM_FIXED, "# pass 1")
    status, stderr = run(root, "cards/api-sum.md", api)
    assert status == 0, stderr
    assert state(root, "cards/api-sum.md") == "Done"
    api_run = log_records(root)[0]["data"]["run_id"]
    assert api_run != web_run and set(marks(root, api_run)) == {"api"}, marks(root, api_run)
    assert sorted(set(marks(root))) == ["api", "web"]
    assert git(root, "status", "--porcelain") == ""


def test_check_try_builds_and_tests_every_package_in_its_own_folder(
    template: Path, tmp_path: Path
) -> None:
    root = make_monorepo(template, tmp_path / "mono")
    tried = cli(root, "check", "--try", ".")
    out = tried.stdout
    # each package's own tests, counted apart (web has two, api one), in the package's folder
    web = "package web (packages/web): try: test (npm test): failed (exit 1), 2 tests ran"
    api = "package api (packages/api): try: test (npm test): failed (exit 1), 1 tests ran"
    assert web in out and api in out, out
    assert "npm error location " + str(root / "packages" / "web") + "\n" in out
    assert "npm error location " + str(root / "packages" / "api") + "\n" in out
    assert "unknown key 'package'" not in out


@pytest.mark.parametrize(
    ("front", "words"),
    [
        ("package: docs", "package 'docs' (packages/docs) has no build or test command"),
        ("package: mobile", "the card names package 'mobile', which cardrunner.toml does not"),
        ("", "the card names no package"),
    ],
)
def test_a_card_no_packages_commands_can_test_is_refused_before_anything_runs(
    template: Path, tmp_path: Path, front: str, words: str
) -> None:
    root = make_monorepo(template, tmp_path / "mono", '\n[packages.docs]\npath = "packages/docs"\n')
    card = root / "cards" / "docs.md"
    card.write_text(
        f"---\ntitle: Document it\nstate: New\n{front}\n---\nDocument it.\n\n"
        "**Acceptance criteria**\n\n- The docs say how.\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a card")
    status, stderr = run(root, "cards/docs.md", [final("RESULT: done")])
    assert status == 2, stderr
    assert words in " ".join(stderr.split()), stderr
    assert marks(root) == [] and state(root, "cards/docs.md") == "New"
    checked = cli(root, "check", "cards/docs.md")
    assert words in " ".join(checked.stdout.split()), checked.stdout


def test_a_packages_own_config_runs_nothing_before_consent(template: Path, tmp_path: Path) -> None:
    root, marker = make_monorepo(template, tmp_path / "mono"), tmp_path / "marker"
    env = untrusted_env(tmp_path / "user")
    assert cli(root, "trust", ".", "--yes", env=env).returncode == 0  # the config as it was
    (root / "packages" / "api" / "cardrunner.toml").write_text(
        'endpoint = { base_url = "http://127.0.0.1:9" }\nsandbox = { mode = "off" }\n'
        f"[commands]\ntest = {json.dumps(payload(marker, 'test'))}\n"
    )
    git(root, "commit", "-qam", "a helpful package config")
    proc = cli(root, "run", "cards/api-sum.md", "--yes", env={**env, "ANTHROPIC_API_KEY": "x"})
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert "changed since you trusted it" in said
    assert "package api (packages/api): test command:" in said, said
    assert ran(marker) == set() and marks(root) == []
    checked = cli(root, "check", ".", env=env).stdout
    assert "packages/api/cardrunner.toml: endpoint: ignored" in checked, checked
    assert "packages/api/cardrunner.toml: sandbox: ignored" in checked
