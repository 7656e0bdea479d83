import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CrashPolicy } from "../../src/crashPolicy";

describe("CrashPolicy", () => {
  it("restarts up to max crashes within the window, then stops", () => {
    const policy = new CrashPolicy(2, 1000);
    assert.deepEqual(policy.crashed(0), { restart: true, count: 1 });
    assert.deepEqual(policy.crashed(10), { restart: true, count: 2 });
    assert.deepEqual(policy.crashed(20), { restart: false, count: 3 });
  });

  it("forgets crashes older than the window", () => {
    const policy = new CrashPolicy(1, 1000);
    assert.equal(policy.crashed(0).restart, true);
    assert.equal(policy.crashed(1500).restart, true);
    assert.equal(policy.crashed(1600).restart, false);
  });

  it("starts over after reset", () => {
    const policy = new CrashPolicy(1, 1000);
    policy.crashed(0);
    policy.crashed(1);
    policy.reset();
    assert.deepEqual(policy.crashed(2), { restart: true, count: 1 });
  });
});
