"""docs/cli.md's exit statuses of `cardrunner run`, held for each outcome through the real CLI.

The status is read from the docs' own sentence ("`run` exits 0 only when …, 1 when …"), so a
change to either the code or the page fails here: Done on the user's branch, Failed, refused,
verified but not committed, and committed on a side branch that waits for review. Each outcome
also leaves the card in its state and ends with its own last line, never "■ DONE" but for 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from cardrunner.testing.fake_api import FakeMessagesAPI
from tests.support.project import cli, fix_transcript, make_project

DOCS = Path(__file__).parents[2] / "docs" / "cli.md"


@dataclass(frozen=True)
class Outcome:
    words: str
    """What docs/cli.md says right after the status number."""
    state: str
    last_line: str


OUTCOMES = {
    "done": Outcome("only when the card ended Done on your branch", "Done", "■ DONE"),
    "failed": Outcome("when it ended Failed", "Failed", "■ FAILED"),
    "refused": Outcome("for a usage\nor configuration error (a refused run", "New", ""),
    "verified": Outcome("when it was verified but not committed", "Review", "VERIFIED"),
    "waiting": Outcome(
        "when the accepted change did not apply to\nyour branch", "Review", "■ WAITING"
    ),
}


def documented(words: str) -> int:
    """The status docs/cli.md gives right before `words` in its sentence on `run`'s statuses."""
    text = DOCS.read_text()
    sentence = " ".join(text[text.index("`run` exits ") :].split(". ")[0].split())
    found = re.search(r"(\d) " + re.escape(" ".join(words.split())), sentence)
    assert found, f"docs/cli.md no longer says {words!r}"
    return int(found[1])


def _setup(root: Path, outcome: str) -> list[str]:
    """The project in the state that leads to `outcome`; the run's extra flags."""
    make_project(root, top_toml="isolation = true\n" if outcome == "waiting" else "")
    calc = root / "src" / "calc.py"
    if outcome == "waiting":  # the user's own work in the file the card changes
        calc.write_text("def add(a, b):\n    return a + b  # mine, not committed\n")
    if outcome == "refused":  # without isolation a dirty write area is refused up front
        calc.write_text("# my own work in progress\n")
    return {"failed": ["--max-rounds", "2"], "verified": ["--no-commit"]}.get(outcome, ["--yes"])


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_each_outcome_exits_with_its_documented_status(tmp_path: Path, outcome: str) -> None:
    expected = OUTCOMES[outcome]
    flags = _setup(tmp_path, outcome)
    with FakeMessagesAPI(fix_transcript()) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test-exit"}
        proc = cli(tmp_path, "run", "cards/fix-add.md", *flags, env=env)
    assert proc.returncode == documented(expected.words), proc.stderr
    card = (tmp_path / "cards" / "fix-add.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["state"] == expected.state
    assert expected.last_line in proc.stderr
    assert ("■ DONE" in proc.stderr) == (outcome == "done"), proc.stderr


def test_the_documented_statuses_are_five_distinct_numbers() -> None:
    assert sorted(documented(o.words) for o in OUTCOMES.values()) == [0, 1, 2, 3, 4]
