import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dialogOf } from "../../src/questions";

describe("dialogOf", () => {
  const trust = {
    message:
      "cardrunner has not run in /work/p before. Its config asks for:\n  • build command: `make`\n" +
      "  • test command: `make test`\nTrust this repository and run?",
    actions: ["Don't run", "Trust and run"],
  };

  it("puts the first line in the message and the list under it", () => {
    const dialog = dialogOf(trust);
    assert.equal(dialog.message, "cardrunner has not run in /work/p before. Its config asks for:");
    assert.equal(dialog.detail, "• build command: `make`\n• test command: `make test`\nTrust this repository and run?");
  });

  it("keeps the server's buttons in order, Escape answering the first (the harmless one)", () => {
    assert.deepEqual(dialogOf(trust).buttons, [
      { title: "Don't run", isCloseAffordance: true },
      { title: "Trust and run", isCloseAffordance: false },
    ]);
  });

  it("shows a one-line question with no detail and no buttons as it is", () => {
    assert.deepEqual(dialogOf({ message: "Continue?", actions: [] }), {
      message: "Continue?",
      detail: "",
      buttons: [],
    });
  });
});
