import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReviewFile } from "../../src/protocol";
import {
  acceptArguments,
  diffPlan,
  evidenceFolds,
  evidenceText,
  parseGrant,
  rejectArguments,
  resumeArguments,
  reviewLabel,
} from "../../src/reviewPlan";

const FILES: ReviewFile[] = [
  { path: "src/new.py", before: null, after: "/w/src/new.py" },
  { path: "src/app.py", before: "/snap/src/app.py", after: "/w/src/app.py" },
  { path: "src/gone.py", before: "/snap/src/gone.py", after: "/w/src/gone.py" },
];

describe("diffPlan", () => {
  it("diffs a new file against empty, a deleted file to empty, a changed file before ↔ after", () => {
    const plan = diffPlan(FILES, (p) => p !== "/w/src/gone.py");
    assert.deepEqual(
      plan.map((e) => [e.path, e.status, e.left, e.right]),
      [
        ["src/new.py", "added", null, "/w/src/new.py"],
        ["src/app.py", "modified", "/snap/src/app.py", "/w/src/app.py"],
        ["src/gone.py", "deleted", "/snap/src/gone.py", null],
      ],
    );
    assert.deepEqual(
      plan.map((e) => e.file),
      ["/w/src/new.py", "/w/src/app.py", "/w/src/gone.py"],
      "both sides of each diff are shown under the real file's path, never the copy's",
    );
    assert.equal(plan[0]?.title, "src/new.py (new file)");
    assert.equal(plan[1]?.title, "src/app.py (before ↔ after)");
  });
});

describe("acceptArguments", () => {
  it("is just the uri when every file is kept", () => {
    assert.deepEqual(
      acceptArguments(
        "file:///c.md",
        FILES,
        FILES.map((f) => f.path),
        "ignored",
      ),
      ["file:///c.md"],
    );
  });

  it("lists dropped files, in review order, with the reason", () => {
    assert.deepEqual(acceptArguments("file:///c.md", FILES, ["src/app.py"], " unrelated "), [
      "file:///c.md",
      { drop: ["src/new.py", "src/gone.py"], reason: "unrelated" },
    ]);
  });

  it("gives a default reason when the reviewer gave none", () => {
    const args = acceptArguments("u", FILES, ["src/app.py", "src/new.py"]);
    assert.deepEqual(args[1], { drop: ["src/gone.py"], reason: "left out by the reviewer" });
  });
});

describe("rejectArguments", () => {
  it("passes the trimmed reason, and refuses an empty one", () => {
    assert.deepEqual(rejectArguments("u", "  name the item in the dialog "), ["u", "name the item in the dialog"]);
    assert.equal(rejectArguments("u", "   "), undefined);
    assert.equal(rejectArguments("u", undefined), undefined);
  });
});

describe("resume grants", () => {
  it("parses rounds and dollars in any order", () => {
    assert.deepEqual(parseGrant(""), {});
    assert.deepEqual(parseGrant("20"), { grantRounds: 20 });
    assert.deepEqual(parseGrant("$1.50"), { grantCostUsd: 1.5 });
    assert.deepEqual(parseGrant("$2 10"), { grantRounds: 10, grantCostUsd: 2 });
    assert.equal(parseGrant("lots"), undefined);
    assert.equal(parseGrant("10 20"), undefined);
  });

  it("sends the grant only when something is granted", () => {
    assert.deepEqual(resumeArguments("u", {}), ["u"]);
    assert.deepEqual(resumeArguments("u", { grantRounds: 5 }), ["u", { grantRounds: 5 }]);
  });
});

describe("evidenceText", () => {
  it("lists each criterion with its status and evidence", () => {
    const text = evidenceText({
      uri: "file:///w/cards/a.md",
      runId: "r1",
      title: "Greeting",
      message: "card: Greeting\n\nSay hello.",
      diffPath: "",
      files: [],
      criteria: [
        { text: "Says hello", status: "verified", evidence: "greet('Ann') -> hello Ann" },
        { text: "Names the user", status: "pending", evidence: "" },
      ],
    });
    assert.match(text, /✓ 1\. Says hello\n {4}verified: greet\('Ann'\) -> hello Ann\n/);
    assert.match(text, /… 2\. Names the user\n {4}pending\n/);
  });
});

describe("a review that fits a laptop", () => {
  it("labels an isolated run's files by their place in the repository", () => {
    const entry = { path: "src/app.py", file: "/repo/.cardrunner/worktrees/20261206-1/src/app.py" };
    assert.equal(reviewLabel(entry, "/repo"), "/repo/src/app.py");
    assert.equal(reviewLabel({ path: "src/app.py", file: "/repo/src/app.py" }, "/repo"), "/repo/src/app.py");
    assert.equal(reviewLabel(entry, undefined), entry.file);
  });

  it("folds the evidence criterion by criterion", () => {
    const text = evidenceText({
      uri: "file:///r/cards/a.md",
      runId: "r",
      title: "A",
      message: "card: a",
      diffPath: "",
      files: [],
      criteria: [
        { text: "one", status: "verified", evidence: "read 'x'" },
        { text: "two", status: "pending", evidence: "" },
      ],
    });
    const lines = text.split("\n");
    const folds = evidenceFolds(text);
    assert.equal(folds.length, 2);
    assert.match(lines[folds[0]![0]]!, /^✓ 1\. one$/);
    assert.match(lines[folds[0]![1]]!, /verified: read 'x'/);
    assert.match(lines[folds[1]![0]]!, /^… 2\. two$/);
  });
});
