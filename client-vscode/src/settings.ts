/**
 * VS Code settings (camelCase ids under `cardrunner.`) → the server's settings shape (snake_case).
 *
 * Why a mapping and not the raw section: the server reads `initializationOptions` and the
 * `cardrunner` configuration section with the same model as `cardrunner.toml`, so the client sends
 * exactly that shape. Only values the user set are sent: an unset (null/empty) setting is left out
 * so the workspace's `cardrunner.toml` keeps its say. Invalid values (wrong type, negative) are
 * left out too and reported, rather than sent for the server to reject. No `vscode` import here.
 */

/** The part of the server's Settings model the editor may override. */
export interface ServerLimits {
  max_rounds?: number;
  max_tokens?: number;
  max_cost_usd?: number | null;
  max_wall_seconds?: number | null;
}

export interface ServerSettings {
  model?: string;
  limits?: ServerLimits;
  isolation?: boolean | null;
}

/** Reads one setting by its id below `cardrunner.` (e.g. `limits.maxRounds`). */
export type SettingReader = (key: string) => unknown;

export interface MappedSettings {
  settings: ServerSettings;
  /** Human-readable problems, e.g. "cardrunner.limits.maxRounds: expected a whole number ≥ 0". */
  problems: string[];
}

/** VS Code setting id (below `cardrunner.limits.`) → server limit key, with the accepted kind. */
const LIMITS: ReadonlyArray<[string, keyof ServerLimits, "int" | "float"]> = [
  ["maxRounds", "max_rounds", "int"],
  ["maxTokens", "max_tokens", "int"],
  ["maxCostUsd", "max_cost_usd", "float"],
  ["maxWallSeconds", "max_wall_seconds", "float"],
];

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}

function validNumber(value: unknown, kind: "int" | "float"): value is number {
  return (
    typeof value === "number" && Number.isFinite(value) && value >= 0 && (kind === "float" || Number.isInteger(value))
  );
}

/** Map the user's settings to the server's shape; unset values are omitted. */
export function toServerSettings(read: SettingReader): MappedSettings {
  const settings: ServerSettings = {};
  const problems: string[] = [];

  const model = read("model");
  if (typeof model === "string" && model.trim() !== "") {
    settings.model = model.trim();
  } else if (!isUnset(model)) {
    problems.push("cardrunner.model: expected a model name");
  }

  const limits: ServerLimits = {};
  for (const [id, key, kind] of LIMITS) {
    const value = read(`limits.${id}`);
    if (isUnset(value)) {
      continue;
    }
    if (validNumber(value, kind)) {
      limits[key] = value;
    } else {
      const what = kind === "int" ? "a whole number ≥ 0" : "a number ≥ 0";
      problems.push(`cardrunner.limits.${id}: expected ${what} (got ${JSON.stringify(value)})`);
    }
  }
  if (Object.keys(limits).length > 0) {
    settings.limits = limits;
  }

  const isolation = read("isolation");
  if (typeof isolation === "boolean") {
    settings.isolation = isolation;
  } else if (!isUnset(isolation)) {
    problems.push("cardrunner.isolation: expected true, false or null");
  }
  return { settings, problems };
}

/** The setting ids whose change needs a new server process (not just a configuration push). */
export const RESTART_SECTION = ["cardrunner.server.command", "cardrunner.server.workspaceEnvironments"];
