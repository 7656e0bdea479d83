import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReviewFile, ReviewRequestedParams } from "../../src/protocol";
import {
  acceptArguments,
  diffPlan,
  parseGrant,
  rejectArguments,
  resumeArguments,
  reviewLabel,
} from "../../src/reviewPlan";
import {
  actionRows,
  criteriaHeading,
  criterionRow,
  diffStats,
  evidenceLines,
  fileRow,
  filesHeading,
} from "../../src/reviewTree";

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

const REVIEW: ReviewRequestedParams = {
  uri: "file:///w/cards/a.md",
  runId: "r1",
  title: "Greeting",
  message: "card: Greeting\n\nSay hello.",
  diffPath: "/w/.cardrunner/runs/r1.diff",
  files: FILES,
  criteria: [
    { text: "Says hello", status: "verified", evidence: "greet('Ann') -> hello Ann" },
    { text: "Names the user", status: "pending", evidence: "" },
  ],
};

// As `git diff` writes it, with a reviewer's `#` comment typed under a line of the review's .diff.
const DIFF = [
  "diff --git a/src/app.py b/src/app.py",
  "index 1..2 100644",
  "--- a/src/app.py",
  "+++ b/src/app.py",
  "@@ -1,3 +1,3 @@",
  " import x",
  "-old = 1",
  "+new = 1",
  "# keep the old name",
  "@@ -10 +10,2 @@",
  "+added()",
  "+--also added, not a header",
  "diff --git a/src/new.py b/src/new.py",
  "new file mode 100644",
  "--- /dev/null",
  "+++ b/src/new.py",
  "@@ -0,0 +1 @@",
  "+print('hi')",
  "diff --git a/src/gone.py b/src/gone.py",
  "deleted file mode 100644",
  "--- a/src/gone.py",
  "+++ /dev/null",
  "@@ -1,2 +0,0 @@",
  "-a",
  "-b",
  "",
].join("\n");

describe("the review list beside the diff", () => {
  const plan = diffPlan(FILES, (p) => p !== "/w/src/gone.py");
  const stats = diffStats(DIFF);

  it("counts each file's hunks and changed lines from the review's .diff, comments left out", () => {
    assert.deepEqual(Object.fromEntries(stats), {
      "src/app.py": { hunks: 2, added: 3, removed: 1 },
      "src/new.py": { hunks: 1, added: 1, removed: 0 },
      "src/gone.py": { hunks: 1, added: 0, removed: 2 },
    });
  });

  it("names each file by its place in the repository, with its state and hunks", () => {
    const rows = plan.map((entry) => fileRow(entry, stats.get(entry.path), entry.path !== "src/new.py"));
    assert.deepEqual(
      rows.map((r) => [r.label, r.description]),
      [
        ["new.py", "added · 1 hunk +1 −0 · src"],
        ["app.py", "2 hunks +3 −1 · src"],
        ["gone.py", "deleted · 1 hunk +0 −2 · src"],
      ],
    );
    assert.match(rows[0]!.tooltip, /^src\/new\.py — added \(left out of the commit\)$/);
    assert.equal(fileRow(plan[1]!, undefined, true).description, "modified · src", "no .diff: the state alone");
  });

  it("puts the decisions first, counting the files kept", () => {
    assert.deepEqual(
      actionRows(REVIEW, 2).map((r) => [r.action, r.label, r.description]),
      [
        ["accept", "Accept & commit", "2 of 3 files"],
        ["reject", "Reject with a reason…", "the model is told"],
        ["diff", "Drop single hunks, comment lines…", ".diff"],
      ],
    );
    assert.deepEqual(
      actionRows({ ...REVIEW, diffPath: "" }, 3).map((r) => r.action),
      ["accept", "reject"],
      "no .diff to open: no third action",
    );
    assert.equal(actionRows({ ...REVIEW, files: FILES.slice(0, 1) }, 1)[0]?.description, "1 of 1 file");
    assert.match(
      actionRows(REVIEW, 3)[0]!.tooltip,
      /as:\n\ncard: Greeting\n\nSay hello\.$/,
      "the commit message, in the hover",
    );
    assert.equal(filesHeading(3, 3).description, "3, all kept");
    assert.equal(filesHeading(2, 3).description, "2 of 3 kept");
  });

  it("numbers the criteria from 1, as the card does, with their status", () => {
    assert.deepEqual(
      REVIEW.criteria.map((c, i) => {
        const row = criterionRow(c, i);
        return [row.label, row.description];
      }),
      [
        ["✓ 1. Says hello", "verified"],
        ["… 2. Names the user", "pending"],
      ],
    );
    assert.match(criterionRow(REVIEW.criteria[0]!, 0).tooltip, /verified: greet\('Ann'\) -> hello Ann$/);
    assert.equal(criteriaHeading(REVIEW.criteria).description, "1 of 2 verified");
    assert.equal(criteriaHeading([]).description, "none reported");
  });

  it("wraps the evidence at word breaks to the side bar's width, losing no word", () => {
    const evidence = "ran python -m unittest: 12 tests passed in 0.4 s, including test_greets_with_comma\nsecond line";
    const lines = evidenceLines(evidence, 30);
    assert.ok(
      lines.every((l) => l.length <= 30),
      lines.join(" | "),
    );
    assert.equal(lines.join(" ").replace(/\s+/g, " "), evidence.replace(/\s+/g, " "));
    assert.equal(lines.at(-1), "second line");
    assert.deepEqual(evidenceLines(""), ["(no evidence given)"]);
  });
});

describe("a review that fits a laptop", () => {
  it("labels an isolated run's files by their place in the repository", () => {
    const entry = { path: "src/app.py", file: "/repo/.cardrunner/worktrees/20261206-1/src/app.py" };
    assert.equal(reviewLabel(entry), "/repo/src/app.py");
    assert.equal(reviewLabel({ path: "src/app.py", file: "/repo/src/app.py" }), "/repo/src/app.py");
  });

  it("labels by the worktree's repository, whatever folder the editor opened (a monorepo package's)", () => {
    const file = "/repo/.cardrunner/worktrees/20261206-1/packages/web/src/a.ts";
    assert.equal(reviewLabel({ path: "packages/web/src/a.ts", file }), "/repo/packages/web/src/a.ts");
  });
});
