import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunInfo } from "../../src/protocol";
import {
  endedMessage,
  formatCost,
  formatTokens,
  MANAGE_TRUST,
  restrictedSign,
  runLine,
  statusText,
  transitions,
  viewsToRefresh,
} from "../../src/statusItems";

function run(over: Partial<RunInfo>): RunInfo {
  return {
    uri: "file:///w/cards/a.md",
    title: "A",
    runId: "r1",
    state: "running",
    round: 1,
    maxRounds: 60,
    tokens: 0,
    costUsd: 0,
    tool: null,
    reason: null,
    logPath: null,
    commit: null,
    estimated: false,
    ...over,
  };
}

describe("formatting", () => {
  it("formats tokens and cost for people", () => {
    assert.equal(formatTokens(950), "950 tok");
    assert.equal(formatTokens(31_200), "31.2k tok");
    assert.equal(formatTokens(1_250_000), "1.25M tok");
    assert.equal(formatCost(0.184), "$0.18");
    assert.equal(formatCost(0), "$0.00");
  });
});

describe("statusText", () => {
  it("is undefined (item hidden) when nothing runs or waits", () => {
    assert.equal(statusText([]), undefined);
    assert.equal(statusText([run({ state: "done" }), run({ state: "failed", runId: "r2" })]), undefined);
  });

  it("shows count, the furthest round and the summed cost of running cards", () => {
    const text = statusText([
      run({ runId: "a", round: 7, costUsd: 0.1 }),
      run({ runId: "b", round: 3, costUsd: 0.08 }),
      run({ runId: "c", state: "done", round: 40, costUsd: 5 }),
    ]);
    assert.equal(text, "$(sync~spin) 2 cards · round 7/60 · $0.18");
  });

  it("says '1 card' and 'round N' without a limit", () => {
    assert.equal(statusText([run({ round: 4, maxRounds: 0, costUsd: 0.01 })]), "$(sync~spin) 1 card · round 4 · $0.01");
  });

  it("says 'baseline check' before the first round", () => {
    assert.equal(statusText([run({ round: 0, maxRounds: 0 })]), "$(sync~spin) 1 card · baseline check · $0.00");
  });

  it("counts cards waiting for review", () => {
    assert.equal(statusText([run({ state: "review" })]), "$(eye) 1 card to review");
    assert.equal(
      statusText([run({ runId: "a", round: 2 }), run({ runId: "b", state: "review" })]),
      "$(sync~spin) 1 card · round 2/60 · $0.00 · 1 to review",
    );
  });
});

describe("runLine and endedMessage", () => {
  it("names the tool of a running card and the reason of a failed one", () => {
    assert.equal(
      runLine(run({ round: 7, tokens: 31_200, costUsd: 0.18, tool: "build_app" })),
      "A — running · round 7/60 · 31.2k tok · $0.18 · build_app",
    );
    assert.equal(
      runLine(run({ state: "failed", round: 60, reason: "max_rounds" })),
      "A — failed · 60 rounds · 0 tok · $0.00 · max_rounds",
    );
  });

  it("gives the short commit of a done run", () => {
    assert.equal(
      endedMessage(run({ state: "done", round: 5, costUsd: 0.2, commit: "0123456789abcdef" })),
      "✓ A: done · commit 01234567 · 5 rounds · $0.20",
    );
    assert.equal(
      endedMessage(run({ state: "failed", round: 1, reason: "cancelled" })),
      "✗ A: failed: cancelled · 1 round · $0.00",
    );
  });
});

describe("transitions", () => {
  it("reports a run entering review, leaving it, and ending", () => {
    const a = run({});
    assert.deepEqual(
      transitions([a], [{ ...a, state: "review" }]).map((t) => t.kind),
      ["enteredReview"],
    );
    assert.deepEqual(
      transitions([{ ...a, state: "review" }], [a]).map((t) => t.kind),
      ["leftReview"],
    );
    assert.deepEqual(
      transitions([{ ...a, state: "review" }], [{ ...a, state: "done" }]).map((t) => t.kind),
      ["leftReview", "ended"],
    );
  });

  it("reports nothing for unchanged states or for runs first seen already ended", () => {
    const a = run({ round: 1 });
    assert.deepEqual(transitions([a], [{ ...a, round: 2 }]), []);
    assert.deepEqual(transitions([], [run({ state: "done" })]), []);
  });

  it("tells runs apart by runId, so a new run of the same card is a new run", () => {
    const old = run({ runId: "r1", state: "failed" });
    const fresh = run({ runId: "r2", state: "running" });
    assert.deepEqual(transitions([old], [old, fresh]), []);
    assert.deepEqual(
      transitions([old, fresh], [old, { ...fresh, state: "failed" }]).map((t) => t.run.runId),
      ["r2"],
    );
  });
});

describe("which run views to ask for again", () => {
  const a = "file:///w/cards/a.md";
  const b = "file:///w/cards/b.md";
  const c = "file:///w/cards/c.md";
  const shown = new Map<string, boolean>([
    [a, true],
    [b, false],
  ]);

  it("skips the view of an ended run while other cards run", () => {
    const runs = [run({ uri: a, state: "running" }), run({ uri: b, state: "done" })];
    assert.deepEqual(
      viewsToRefresh([a, b], (x) => shown.get(x), runs),
      [a],
    );
  });

  it("asks once more for a view that last showed its run live, to show the end", () => {
    const runs = [run({ uri: a, state: "done" })];
    assert.deepEqual(
      viewsToRefresh([a], (x) => shown.get(x), runs),
      [a],
    );
  });

  it("asks for a view whose card runs again, and for one not shown yet", () => {
    const runs = [run({ uri: b, state: "review" })];
    assert.deepEqual(
      viewsToRefresh([b, c], (x) => shown.get(x), runs),
      [b, c],
    );
  });
});

describe("what a run is doing, in words", () => {
  it("says baseline check before the first round and waiting for your review while it waits", () => {
    assert.match(statusText([run({ round: 0 })]) ?? "", /baseline check/);
    assert.match(runLine(run({ state: "review", round: 15, tool: "git_commit" })), /waiting for your review$/);
    assert.doesNotMatch(runLine(run({ state: "review", round: 15, tool: "git_commit" })), /git_commit/);
  });

  it("marks an estimated cost as the CLI, the log and the card do, in the status bar, the toast and the lines", () => {
    const replayed = run({ estimated: true, costUsd: 0.0649, state: "done", round: 16 });
    assert.equal(formatCost(0.0649, true), "~$0.06 (estimate)");
    assert.match(endedMessage(replayed), /· ~\$0\.06 \(estimate\)$/);
    assert.match(runLine(replayed), /~\$0\.06 \(estimate\)/);
    assert.match(statusText([run({ estimated: true, costUsd: 0.02 })]) ?? "", /~\$0\.02 \(estimate\)/);
    assert.doesNotMatch(endedMessage({ ...replayed, estimated: false }), /estimate|~/);
  });
});

describe("restrictedSign", () => {
  it("stays in the status bar while the folder is untrusted, says why and offers Trust", () => {
    const sign = restrictedSign("restricted");
    assert.ok(sign);
    assert.match(sign.text, /^\$\(shield\) cardrunner: Restricted Mode$/);
    assert.match(sign.tooltip, /starts no server/);
    assert.match(sign.tooltip, /folder's own programs/);
    assert.match(sign.tooltip, /no ▶ Run card until you trust the folder/);
    assert.deepEqual(sign.command, { title: "Manage Workspace Trust", command: "workbench.trust.manage" });
    assert.equal(MANAGE_TRUST, "workbench.trust.manage");
  });

  it("is gone in every other server state: trusted, the server starts or runs or failed", () => {
    for (const state of ["starting", "running", "stopped", "failed"] as const) {
      assert.equal(restrictedSign(state), undefined, state);
    }
  });
});
