import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { initializationOptions, parseReviewRequested, parseRunStatus, parseSandbox } from "../../src/protocol";

const RUN = {
  uri: "file:///w/cards/delete.md",
  title: "Delete asks first",
  runId: "r1",
  state: "running",
  round: 7,
  maxRounds: 60,
  tokens: 31200,
  costUsd: 0.18,
  tool: "build_app",
  reason: null,
  logPath: "/w/.cardrunner/runs/r1.jsonl",
  commit: null,
  estimated: false,
};

describe("parseRunStatus", () => {
  it("reads a well-formed notification unchanged", () => {
    assert.deepEqual(parseRunStatus({ runs: [RUN] }), [RUN]);
  });

  it("drops entries without a uri or with an unknown state, keeps the rest", () => {
    const runs = parseRunStatus({ runs: [RUN, { ...RUN, uri: 3 }, { ...RUN, state: "paused" }, null, "x"] });
    assert.equal(runs.length, 1);
  });

  it("fills missing numbers with 0 and missing title from the file name", () => {
    const [run] = parseRunStatus({ runs: [{ uri: "file:///w/cards/a.md", state: "done", costUsd: "NaN" }] });
    assert.ok(run);
    assert.equal(run.title, "a.md");
    assert.equal(run.costUsd, 0);
    assert.equal(run.round, 0);
    assert.equal(run.commit, null);
  });

  it("reads a replayed run (or the server's flag) as an estimated cost", () => {
    const [replayed, flagged] = parseRunStatus({
      runs: [
        { ...RUN, model: "replay:demo.json" },
        { ...RUN, costEstimated: true },
      ],
    });
    assert.equal(replayed?.estimated, true);
    assert.equal(flagged?.estimated, true);
  });

  it("treats a missing or broken list as no runs", () => {
    assert.deepEqual(parseRunStatus(undefined), []);
    assert.deepEqual(parseRunStatus({ runs: "no" }), []);
  });
});

describe("parseReviewRequested", () => {
  it("reads files, keeping null for a new file's before", () => {
    const review = parseReviewRequested({
      uri: "file:///w/cards/a.md",
      runId: "r1",
      title: "A",
      message: "Commit: add greeting",
      diffPath: "/w/.cardrunner/runs/r1.diff",
      files: [
        { path: "src/new.py", before: null, after: "/w/src/new.py" },
        { path: "src/old.py", before: "/tmp/snap/src/old.py", after: "/w/src/old.py" },
        { before: "/x" },
      ],
    });
    assert.ok(review);
    assert.equal(review.files.length, 2);
    assert.equal(review.files[0]?.before, null);
    assert.equal(review.files[1]?.before, "/tmp/snap/src/old.py");
  });

  it("reads each criterion's status and evidence, dropping what is not an object", () => {
    const review = parseReviewRequested({
      uri: "file:///w/cards/a.md",
      criteria: [{ text: "Says hello", status: "verified", evidence: "greet('Ann') -> hello Ann" }, 3],
    });
    assert.deepEqual(review?.criteria, [
      { text: "Says hello", status: "verified", evidence: "greet('Ann') -> hello Ann" },
    ]);
  });

  it("rejects a notification that names no card", () => {
    assert.equal(parseReviewRequested({ files: [] }), undefined);
  });
});

describe("initializationOptions", () => {
  it("asks for the custom notifications and says it shows reviews, next to the settings", () => {
    const settings = { model: "claude-opus-5-5", limits: { max_rounds: 30 } };
    assert.deepEqual(initializationOptions(settings), {
      model: "claude-opus-5-5",
      limits: { max_rounds: 30 },
      client: { notifications: true, nativeReview: true },
    });
    assert.deepEqual(settings, { model: "claude-opus-5-5", limits: { max_rounds: 30 } });
  });
});

describe("parseSandbox", () => {
  it("reads the sandbox mode the server names in runStatus", () => {
    const mode = "sandbox: bubblewrap (no network; writes only to the write area and a private /tmp)";
    assert.equal(parseSandbox({ runs: [], sandbox: mode }), mode);
  });

  it("is undefined when the server names none or sends something else", () => {
    assert.equal(parseSandbox({ runs: [] }), undefined);
    assert.equal(parseSandbox({ runs: [], sandbox: 3 }), undefined);
    assert.equal(parseSandbox({ runs: [], sandbox: "" }), undefined);
    assert.equal(parseSandbox(null), undefined);
  });
});
