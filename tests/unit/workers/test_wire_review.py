"""The review crosses the worker's pipe whole: warnings out, a knowing accept back."""

from __future__ import annotations

import json
from pathlib import Path

from cardrunner.agent.review import Proof, ReviewDecision, ReviewRequest
from cardrunner.workers.wire import decode_decision, decode_review, encode_decision, encode_review


def test_a_knowing_accept_and_the_reviews_warnings_survive_the_pipe() -> None:
    request = ReviewRequest(
        run_id="r",
        card_title="t",
        card_path=Path("cards/t.md"),
        root=Path("."),
        message="card: t",
        files=["src/a.py"],
        diff="diff",
        base_tree="abc",
        warnings=["fewer tests ran than at the start of the run (3 → 2)"],
        checks="build ok · test ok, 2 ran (3 at start)",
        evidence=['criterion 0: verified — run_tests toolu_1: "2 passed"'],
        proof={0: Proof("in the app", (".cardrunner/runs/r/evidence/t-1.png",)), 2: Proof("x")},
    )
    assert decode_review(json.loads(json.dumps(encode_review(request)))) == request
    decision = ReviewDecision("accept", acknowledged=True)
    assert decode_decision(encode_decision(decision)).acknowledged is True
    assert decode_decision(encode_decision(ReviewDecision("accept"))).acknowledged is False
