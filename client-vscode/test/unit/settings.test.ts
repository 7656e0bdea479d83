import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { toServerSettings } from "../../src/settings";

function reader(values: Record<string, unknown>) {
  return (key: string): unknown => values[key];
}

describe("toServerSettings", () => {
  it("sends nothing when nothing is set, so cardrunner.toml keeps its say", () => {
    const out = toServerSettings(reader({ model: "", "limits.maxRounds": null, isolation: null }));
    assert.deepEqual(out, { settings: {}, problems: [] });
  });

  it("maps camelCase VS Code ids to the server's snake_case shape", () => {
    const out = toServerSettings(
      reader({
        model: " claude-opus-5-5 ",
        "limits.maxRounds": 30,
        "limits.maxTokens": 200000,
        "limits.maxCostUsd": 1.5,
        "limits.maxWallSeconds": 600,
        isolation: true,
      }),
    );
    assert.deepEqual(out.settings, {
      model: "claude-opus-5-5",
      limits: { max_rounds: 30, max_tokens: 200000, max_cost_usd: 1.5, max_wall_seconds: 600 },
      isolation: true,
    });
    assert.deepEqual(out.problems, []);
  });

  it("keeps 0 (limit off) and false, which are values, not 'unset'", () => {
    const out = toServerSettings(reader({ "limits.maxCostUsd": 0, "limits.maxRounds": 0, isolation: false }));
    assert.deepEqual(out.settings, { limits: { max_rounds: 0, max_cost_usd: 0 }, isolation: false });
  });

  it("leaves out invalid values and says which setting and why", () => {
    const out = toServerSettings(
      reader({ "limits.maxRounds": 2.5, "limits.maxTokens": -1, "limits.maxCostUsd": "1", isolation: "yes", model: 7 }),
    );
    assert.deepEqual(out.settings, {});
    assert.equal(out.problems.length, 5);
    assert.match(out.problems.join("\n"), /cardrunner\.limits\.maxRounds: expected a whole number ≥ 0 \(got 2\.5\)/);
    assert.match(out.problems.join("\n"), /cardrunner\.limits\.maxCostUsd: expected a number ≥ 0 \(got "1"\)/);
    assert.match(out.problems.join("\n"), /cardrunner\.isolation/);
    assert.match(out.problems.join("\n"), /cardrunner\.model/);
  });

  it("accepts a fractional cost and wall time but not fractional rounds", () => {
    const out = toServerSettings(reader({ "limits.maxWallSeconds": 90.5, "limits.maxRounds": 3 }));
    assert.deepEqual(out.settings, { limits: { max_rounds: 3, max_wall_seconds: 90.5 } });
  });
});
