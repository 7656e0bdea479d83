import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StderrClassifier } from "../../src/serverLog";

describe("StderrClassifier", () => {
  it("reads the level of Python logging lines and drops their timestamp", () => {
    const c = new StderrClassifier();
    assert.deepEqual(c.classify("2026-11-29 11:45:57,921 INFO cardrunner.lsp: warmed up in 7.7 s"), {
      level: "info",
      text: "cardrunner.lsp: warmed up in 7.7 s",
    });
    assert.equal(c.classify("2026-11-29 11:45:58,001 WARNING cardrunner.lsp: slow").level, "warn");
    assert.equal(c.classify("DEBUG:cardrunner.runs:tick").level, "debug");
    assert.deepEqual(c.classify("ERROR:cardrunner.lsp:boom"), { level: "error", text: "cardrunner.lsp:boom" });
  });

  it("keeps the level for continuation lines and makes a bare traceback an error", () => {
    const c = new StderrClassifier();
    c.classify("2026-11-29 11:45:57,921 INFO cardrunner.lsp: config:");
    assert.equal(c.classify("  model = claude").level, "info");
    assert.equal(c.classify("Traceback (most recent call last):").level, "error");
    assert.equal(c.classify('  File "x.py", line 1').level, "error");
  });

  it("treats unknown output before any logging line as an error", () => {
    assert.deepEqual(new StderrClassifier().classify("Segmentation fault"), {
      level: "error",
      text: "Segmentation fault",
    });
  });

  it("does not mistake a word like INFORMATION for a level", () => {
    assert.equal(new StderrClassifier().classify("INFORMATION follows").level, "error");
  });
});
