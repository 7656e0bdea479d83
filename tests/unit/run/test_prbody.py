"""The pull-request body and the commit's evidence ledger, from a folded run view."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardrunner.board.prbody import RunReport, inert, pr_body, with_ledger
from cardrunner.card.card import parse_card
from cardrunner.card.record import unclosing
from cardrunner.record.state import Criterion, RunState

CARD = """---
title: Delete asks first
state: New
---
Deleting a row is instant.

**Acceptance criteria**

- A dialog names the item.
- "No" keeps the row.
"""


def view(*criteria: Criterion) -> RunState:
    v = RunState(Path("cards/delete.md"), "run-1", "Delete asks first", state="done", round=5)
    v.tokens, v.cost_usd, v.criteria = 12_345, 0.25, list(criteria)
    return v


def report(v: RunState, pushed: bool = True) -> RunReport:
    card, _ = parse_card(CARD, Path("cards/delete.md"))
    assert card is not None
    return RunReport(
        card=card,
        card_path="cards/delete.md",
        view=v,
        branch="cards/delete",
        model="m",
        log_path=".cardrunner/runs/run-1.jsonl",
        pushed_to="origin" if pushed else None,
        why_not_pushed="" if pushed else "the card ended Failed (max_cost): over budget",
    )


def test_the_body_lists_every_criterion_with_its_evidence() -> None:
    v = view(
        Criterion("A dialog names the item.", "verified", "dialog text: Delete 'Pens'?"),
        Criterion('"No" keeps the row.', "failed", "row gone\nafter No"),
    )
    body = pr_body(report(v))
    assert body.startswith("## Delete asks first\n")
    assert "- ✅ **1.** A dialog names the item.\n  - evidence: dialog text: Delete 'Pens'?" in body
    assert '- ❌ **2.** "No" keeps the row.\n  - evidence: row gone after No' in body
    assert "| Done | 5 | 12,345 | $0.2500 |" in body
    assert "`.cardrunner/runs/run-1.jsonl`" in body and "> Deleting a row is instant." in body
    assert "review happens on this pull request" in body


def test_an_estimated_cost_is_marked_in_the_body() -> None:
    """A replayed run's cost, or one whose usage the endpoint did not report, is an estimate."""
    replayed, unreported = view(), view()
    replayed.model, unreported.estimated = "replay:delete.json", True
    for v in (replayed, unreported):
        assert "| Done | 5 | 12,345 | ~$0.2500 (estimate) |" in pr_body(report(v))


def test_a_body_that_was_not_pushed_says_why() -> None:
    v = view(Criterion("A dialog names the item."))
    v.state, v.reason = "failed", "max_cost"
    body = pr_body(report(v, pushed=False))
    assert body.splitlines()[0] == "## Delete asks first — not pushed"
    assert "**Nothing was pushed:** the card ended Failed (max_cost): over budget" in body
    assert "evidence: none reported" in body and "| Failed (max_cost) |" in body
    assert "review happens on this pull request" not in body


def test_evidence_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value-123")
    v = view(Criterion("A dialog names the item.", "verified", "env had sk-secret-value-123"))
    assert "sk-secret-value-123" not in pr_body(report(v))
    assert "sk-secret-value-123" not in with_ledger("card: x\n\nCard: x\n", v)


def test_the_ledger_goes_before_the_trailers_once() -> None:
    v = view(
        Criterion("A dialog names the item.", "verified", "dialog shown"),
        Criterion('"No" keeps the row.'),
    )
    message = "card: Delete asks first\n\nAsk first.\n\nCard: delete\nRun: run-1\n"
    out = with_ledger(message, v)
    assert out == (
        "card: Delete asks first\n\nAsk first.\n\nEvidence:\n"
        "- [x] 1. A dialog names the item. — dialog shown\n"
        '- [ ] 2. "No" keeps the row.\n\nCard: delete\nRun: run-1\n'
    )
    assert with_ledger(out, v) == out  # a message that carries the evidence stays as it is
    assert with_ledger("card: x\n", v).endswith('— dialog shown\n- [ ] 2. "No" keeps the row.\n')


HOSTILE = (
    "@octocat Fixes #1, closes: owner/repo#2, resolved https://github.com/o/r/issues/3 "
    '<img src="https://evil.example/x.png"> ![t](https://evil.example/y.png) [l](https://x.y)'
)


def test_model_evidence_reaches_the_body_as_inert_text() -> None:
    v = view(Criterion("A dialog names the item.", "verified", HOSTILE))
    body = pr_body(report(v))
    evidence = body.split("evidence: ", 1)[1].split("\n", 1)[0]
    assert "@octocat" not in evidence and "@\u200boctocat" in evidence
    assert "#1" not in evidence and "repo#2" not in evidence and "issues/3" not in evidence
    # closing keywords are rewritten visibly: the words stay, the reference is gone
    assert "Fixes issue 1, closes: owner/repo issue 2, resolved o/r issue 3" in evidence
    assert "<img" not in evidence and "&lt;img" in evidence
    assert "![t](" not in evidence and "!\\[t\\](" in evidence and "\\[l\\]" in evidence
    # nothing else is lost: without the zero-width spaces and escapes it reads as the model
    # wrote it, its closing keywords rewritten
    shown = evidence.replace("\u200b", "").replace("\\[", "[").replace("\\]", "]")
    unescaped = shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert unescaped == unclosing(HOSTILE, note=False)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("@#<>&[]!()fixesclo GH-12ab:/\n`")))
def test_inert_text_has_no_mention_reference_tag_or_link(text: str) -> None:
    out = inert(text)
    assert "<" not in out and ">" not in out
    assert not re.search(r"@[A-Za-z0-9]", out) and not re.search(r"(#|GH-)\d", out, re.I)
    assert not re.search(r"(?<!\\)[\[\]]", out)
    closing = r"\b(close[sd]?|fix(e[sd])?|resolve[sd]?):?\s*(#|GH-|https?:|[\w.-]+/[\w.-]+#)"
    assert not re.search(closing, out, re.I)


def test_screenshots_and_where_a_criterion_was_checked_go_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    shot = ".cardrunner/runs/run-1/evidence/toolu_1-1.png"
    hostile = "x.png](https://evil.example/track.png) ![a"
    v = view(
        Criterion(
            "A dialog names the item.", "verified", "seen", screenshots=[shot, hostile],
            where=" in the app",
        ),
        Criterion('"No" keeps the row.', "verified", "read", where=" in the code only (x)"),
    )  # fmt: skip
    body = pr_body(report(v))
    assert "- ✅ **1.** A dialog names the item. — checked in the app" in body
    assert f"  - screenshots: `{shot}`\n" in body  # cardrunner's own file, as a code span
    assert "evil.example" not in body  # a path not of cardrunner's own shape is left out
    assert '"No" keeps the row. — checked in the code only (x)' in body
    assert "([the workflow run](https://github.com/o/r/actions/runs/42))" in body
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r)(javascript:x")
    assert "workflow run" not in pr_body(report(v))  # not a plain owner/name: no link
