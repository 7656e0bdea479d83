import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canMove, cardDetail, contextValue, demoArgv, newCard, parseBoard } from "../../src/board";

const running = {
  uri: "file:///w/cards/a.md",
  path: "cards/a.md",
  title: "A",
  state: "In Work",
  category: "Bug",
  line: 1,
  run: {
    runId: "r1",
    state: "running",
    round: 7,
    maxRounds: 60,
    tokens: 100,
    costUsd: 0.181,
    tool: "run_tests",
    summary: "x",
    logPath: "/w/l.jsonl",
  },
  review: null,
  lastReason: null,
  problems: [],
  actions: [
    { title: "■ Cancel", command: "cardrunner.cancelRun", arguments: ["file:///w/cards/a.md"] },
    { title: "round 7/60", command: "cardrunner.showLog", arguments: ["file:///w/cards/a.md"] },
  ],
};

describe("parseBoard", () => {
  it("keeps the five columns in order and drops malformed cards", () => {
    const board = parseBoard({
      running: 1,
      waitingReviews: 0,
      columns: [{ state: "In Work", cards: [running, { uri: 3 }, { uri: "x", state: "Later" }] }],
    });
    assert.deepEqual(
      board.columns.map((c) => [c.state, c.cards.length]),
      [
        ["New", 0],
        ["In Work", 1],
        ["Review", 0],
        ["Done", 0],
        ["Failed", 0],
      ],
    );
    assert.equal(board.columns[1]?.cards[0]?.run?.round, 7);
    assert.equal(board.running, 1);
  });

  it("survives answers that are not boards", () => {
    for (const raw of [null, 3, "x", { columns: "no" }]) {
      assert.equal(parseBoard(raw).columns.flatMap((c) => c.cards).length, 0);
    }
  });
});

describe("card lines and menus", () => {
  const [card] = parseBoard({ columns: [{ state: "In Work", cards: [running] }] }).columns[1]!.cards;

  it("shows the live round, cost and tool of a running card", () => {
    assert.equal(cardDetail(card!), "round 7/60 · $0.18 · run_tests");
  });

  it("marks the cost of a run the server calls estimated as the CLI does", () => {
    const [estimated] = parseBoard({
      columns: [{ state: "In Work", cards: [{ ...running, run: { ...running.run, costEstimated: true } }] }],
    }).columns[1]!.cards;
    assert.equal(cardDetail(estimated!), "round 7/60 · ~$0.18 (estimate) · run_tests");
  });

  it("says a review waits, and why a card failed", () => {
    const review = { ...card!, state: "Review" as const, review: { diffPath: "/d", files: ["a", "b"], message: "" } };
    assert.equal(cardDetail(review), "waiting for review · 2 file(s)");
    assert.equal(cardDetail({ ...card!, state: "Failed", run: null, lastReason: "max_rounds" }), "max_rounds");
  });

  it("flags exactly the actions the server offers", () => {
    assert.equal(contextValue(card!), "card running log");
    const idle = {
      ...card!,
      run: null,
      actions: [{ title: "▶ Run card", command: "cardrunner.runCard", arguments: [] }],
    };
    assert.equal(contextValue(idle), "card runnable");
  });

  it("moves by hand only between New, Done and Failed", () => {
    assert.equal(canMove("New", "Done"), true);
    assert.equal(canMove("Done", "Failed"), true);
    assert.equal(canMove("New", "In Work"), false);
    assert.equal(canMove("Review", "Done"), false);
    assert.equal(canMove("New", "New"), false);
  });
});

describe("newCard", () => {
  it("writes a parseable template named after the title", () => {
    const { fileName, text } = newCard("Delete: ask first");
    assert.equal(fileName, "delete-ask-first.md");
    assert.match(text, /^---\ntitle: "Delete: ask first"\nstate: New\n/);
    assert.match(text, /\n## Acceptance criteria\n\n- /);
  });
});

describe("demoArgv", () => {
  it("runs the demo with the server's interpreter", () => {
    assert.deepEqual(demoArgv(["/w/.venv/bin/python", "-m", "cardrunner", "lsp"]), [
      "/w/.venv/bin/python",
      "-m",
      "cardrunner",
      "demo",
    ]);
    assert.deepEqual(demoArgv(undefined), ["cardrunner", "demo"]);
  });
});
