import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { budgetLine, parseTimeline, resultLine, runPage } from "../../src/runTimeline";

const ANSWER = {
  uri: "file:///w/cards/a.md",
  live: true,
  logPath: "/w/.cardrunner/runs/r1.jsonl",
  text: "run r1 …",
  timeline: {
    title: "Greeting",
    state: "running",
    round: 3,
    maxRounds: 12,
    tokens: 9100,
    costUsd: 0.25,
    maxCostUsd: 2,
    omittedRounds: 0,
    rounds: [
      {
        round: 1,
        text: "Let me read the greeting first.",
        costUsd: 0.01,
        calls: [{ id: "t1", name: "read_file", arguments: '{"path": "src/greet.py"}', result: "def greet", ms: 3 }],
      },
      { round: 2, text: "", costUsd: 0.01, calls: [{ name: 7 }, "not a call"] },
      "not a round",
    ],
    criteria: [
      { text: "Says hello", status: "verified", evidence: "greet('Ann') -> hello Ann" },
      { text: "Names the user", status: "pending", evidence: "" },
    ],
    tool: "run_tests",
    output: ["test_a ... ok", 3],
  },
};

describe("runPage", () => {
  it("carries the rounds with their narration and calls, the criteria and the running call", () => {
    const page = runPage("file:///w/cards/a.md", ANSWER);
    const t = page.timeline;
    assert.ok(t);
    assert.equal(page.logPath, "/w/.cardrunner/runs/r1.jsonl");
    assert.equal(page.live, true);
    assert.deepEqual(
      t.rounds.map((r) => [r.round, r.text, r.calls.map((c) => c.name)]),
      [
        [1, "Let me read the greeting first.", ["read_file"]],
        [2, "", [""]],
      ],
    );
    assert.deepEqual(t.rounds[0]?.calls[0], {
      id: "t1",
      name: "read_file",
      arguments: '{"path": "src/greet.py"}',
      result: "def greet",
      isError: false,
      ms: 3,
    });
    assert.deepEqual(
      t.criteria.map((c) => c.status),
      ["verified", "pending"],
    );
    assert.equal(t.tool, "run_tests");
    assert.deepEqual(t.output, ["test_a ... ok"]);
    assert.equal(page.budget, "round 3/12 · 9.1k tok · $0.25 of $2.00 ($1.75 left)");
    assert.equal(page.result, "");
  });

  it("says why there is nothing to draw when the answer has no timeline", () => {
    const page = runPage("file:///w/cards/a.md", { uri: "x", logPath: null, live: false, text: "no run yet" });
    assert.equal(page.timeline, null);
    assert.equal(page.message, "no run yet");
    assert.equal(runPage("u", undefined).message, "no run yet");
  });
});

describe("budgetLine and resultLine", () => {
  const base = parseTimeline({ ...ANSWER.timeline, state: "done", commit: "0123456789abcdef", maxCostUsd: null });
  it("counts an ended run's rounds and says when there is no cost limit", () => {
    assert.ok(base);
    assert.equal(budgetLine(base), "3 rounds · 9.1k tok · $0.25 (no cost limit)");
    assert.equal(resultLine(base), "Done · commit 0123456789");
  });

  it("names a failure's reason and detail", () => {
    const failed = parseTimeline({ ...ANSWER.timeline, state: "failed", reason: "max_rounds", detail: "12 rounds" });
    assert.ok(failed);
    assert.equal(resultLine(failed), "Failed (max_rounds): 12 rounds");
  });
});

describe("the run view's words for what the run is doing", () => {
  const base = { title: "T", state: "review", round: 15, maxRounds: 60, tokens: 1000, costUsd: 0.0649, rounds: [] };
  it("says waiting for your review, and marks a replayed run's cost as an estimate", () => {
    const t = parseTimeline({ ...base, model: "replay:total.json" });
    assert.ok(t);
    assert.equal(budgetLine(t), "round 15/60 · 1.0k tok · ~$0.06 (estimate, no cost limit) · waiting for your review");
    const billed = parseTimeline({ ...base, state: "running", model: "claude-x", costEstimated: false });
    assert.ok(billed);
    assert.equal(budgetLine(billed), "round 15/60 · 1.0k tok · $0.06 (no cost limit)");
    const flagged = parseTimeline({ ...base, state: "running", model: "claude-x", costEstimated: true });
    assert.match(budgetLine(flagged!), /~\$0\.06 \(estimate, no cost limit\)/);
  });
});
