import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { handleBoardMessage, parseBoard, type BoardIntents } from "../../src/board";

/**
 * The board's webview renders a stranger's card text, so whatever runs in it may post anything:
 * only what the board offers, for the cards it shows, is carried out.
 */
const uri = "file:///w/cards/a.md";
const board = parseBoard({
  running: 0,
  waitingReviews: 0,
  columns: [
    {
      state: "New",
      cards: [
        {
          uri,
          path: "cards/a.md",
          title: "<img src=x onerror=alert(1)>",
          state: "New",
          line: 1,
          actions: [{ title: "▶ Run card", command: "cardrunner.runCard", arguments: [uri] }],
        },
      ],
    },
    {
      state: "Review",
      cards: [
        {
          uri: "file:///w/cards/b.md",
          path: "cards/b.md",
          title: "B",
          state: "Review",
          line: 1,
          actions: [],
        },
      ],
    },
  ],
});

function recorder(): { calls: unknown[][]; intents: BoardIntents; ready: () => void } {
  const calls: unknown[][] = [];
  return {
    calls,
    intents: {
      action: (command, args) => calls.push(["action", command, args]),
      move: (to, state) => calls.push(["move", to, state]),
      open: (to) => calls.push(["open", to]),
    },
    ready: () => calls.push(["ready"]),
  };
}

function send(message: unknown): unknown[][] {
  const r = recorder();
  handleBoardMessage(board, message, r.intents, r.ready);
  return r.calls;
}

describe("board messages", () => {
  it("runs an action a card on the board offers", () => {
    assert.deepEqual(send({ type: "action", command: "cardrunner.runCard", arguments: [uri] }), [
      ["action", "cardrunner.runCard", [uri]],
    ]);
    assert.deepEqual(send({ type: "ready" }), [["ready"]]);
  });

  it("ignores a message asking for another command", () => {
    for (const message of [
      { type: "action", command: "workbench.action.terminal.new", arguments: [] },
      { type: "action", command: "vscode.open", arguments: ["https://attacker.example/"] },
      { type: "action", command: "workbench.action.tasks.runTask", arguments: ["build"] },
      { type: "action", command: "cardrunner.acceptChanges", arguments: [uri] }, // not offered
      { type: "action", command: "cardrunner.runCard", arguments: ["file:///elsewhere/x.md"] },
      { type: "action", command: "cardrunner.runCard", arguments: [uri, { force: true }] },
      { type: "action", command: "cardrunner.runCard" },
      { type: "run", command: "cardrunner.runCard", arguments: [uri] },
      null,
      "action",
    ]) {
      assert.deepEqual(send(message), [], JSON.stringify(message));
    }
  });

  it("opens and moves only the cards it shows, by their real column", () => {
    assert.deepEqual(send({ type: "open", uri }), [["open", uri]]);
    assert.deepEqual(send({ type: "open", uri: "file:///etc/passwd" }), []);
    assert.deepEqual(send({ type: "open", uri: "command:workbench.action.terminal.new" }), []);
    assert.deepEqual(send({ type: "move", uri, from: "New", to: "Done" }), [["move", uri, "Done"]]);
    // b.md is in Review (a run's): the page claiming it is in New does not make it movable
    assert.deepEqual(send({ type: "move", uri: "file:///w/cards/b.md", from: "New", to: "Done" }), []);
    assert.deepEqual(send({ type: "move", uri, from: "New", to: "In Work" }), []);
    assert.deepEqual(send({ type: "move", uri, from: "New", to: "Elsewhere" }), []);
  });
});
