/**
 * The server's custom surface, mirrored once (documented in docs/lsp-extensions.md).
 *
 * Why here and nowhere else: every other module imports these names and types, so a change in the
 * contract is one edit. Incoming params are checked by `parseRunStatus` / `parseReviewRequested`
 * because a notification from a newer or older server must never crash the client; malformed
 * entries are dropped. This module does not import `vscode`, so it is unit-tested under plain Node.
 */

/** Commands the server registers (workspace/executeCommand); first argument the card's URI. */
export const ServerCommand = {
  runCard: "cardrunner.runCard",
  cancelRun: "cardrunner.cancelRun",
  resumeRun: "cardrunner.resumeRun",
  acceptChanges: "cardrunner.acceptChanges",
  rejectChanges: "cardrunner.rejectChanges",
  showDiff: "cardrunner.showDiff",
  showLog: "cardrunner.showLog",
  setState: "cardrunner.setState",
} as const;

/** Commands only this client registers; never the server's ids (the client registers those). */
export const ClientCommand = {
  runCard: "cardrunner.client.runCard",
  cancelRun: "cardrunner.client.cancelRun",
  resumeRun: "cardrunner.client.resumeRun",
  review: "cardrunner.client.review",
  showLog: "cardrunner.client.showLog",
  setApiKey: "cardrunner.client.setApiKey",
  clearApiKey: "cardrunner.client.clearApiKey",
  restartServer: "cardrunner.client.restartServer",
  showOutput: "cardrunner.client.showOutput",
  openRawLog: "cardrunner.client.openRawLog",
} as const;

/** What this client says of itself at `initialize` (initializationOptions `client`). */
export interface OwnOptions {
  /** Send the custom notifications below (others' editors would warn on each). */
  notifications: true;
  /** Reviews are shown here, from `cardrunner/reviewRequested` (review.ts): the server neither
   * opens its `.diff` document nor asks its review question. */
  nativeReview: true;
}

/**
 * `initializationOptions` as this client sends them: the settings in the server's shape, plus the
 * one key that is not a setting, `client`: it asks for the custom notifications and says that
 * reviews are shown natively, so the server keeps its generic review UI for other editors.
 */
export function initializationOptions<S extends object>(settings: S): S & { client: OwnOptions } {
  return { ...settings, client: { notifications: true, nativeReview: true } };
}

export const RunStatusMethod = "cardrunner/runStatus";
export const ReviewRequestedMethod = "cardrunner/reviewRequested";
/** Custom requests: the board (board.ts parses it) and a run told as `cardrunner log` tells it. */
export const BoardMethod = "cardrunner/board";
export const RunSummaryMethod = "cardrunner/runSummary";

export type RunState = "running" | "review" | "done" | "failed";

/** One run as the server reports it in `cardrunner/runStatus`. */
export interface RunInfo {
  uri: string;
  title: string;
  runId: string;
  state: RunState;
  round: number;
  maxRounds: number;
  tokens: number;
  costUsd: number;
  tool: string | null;
  reason: string | null;
  logPath: string | null;
  commit: string | null;
  /** The cost is an estimate, not a bill: a replayed run (or an endpoint that reported no usage). */
  estimated: boolean;
}

/** Whether a run's cost is an estimate: the server says so, or the model was replayed. */
export function costEstimated(raw: Record<string, unknown>): boolean {
  return raw.costEstimated === true || (typeof raw.model === "string" && raw.model.startsWith("replay:"));
}

/** `cardrunner/runStatus`: the full list of known runs, each time something changes. */
export interface RunStatusParams {
  runs: RunInfo[];
  /** How the model's code is confined, e.g. "sandbox: bubblewrap (no network; …)". */
  sandbox?: string;
}

/** One changed file: `before` is a copy taken at run start (null: new file). */
export interface ReviewFile {
  path: string;
  before: string | null;
  after: string;
}

/** One acceptance criterion as the run left it, shown beside the review's diff. */
export interface ReviewCriterion {
  text: string;
  status: string;
  evidence: string;
}

/** `cardrunner/reviewRequested`: a run stopped before `git_commit` and waits for a decision. */
export interface ReviewRequestedParams {
  uri: string;
  runId: string;
  title: string;
  message: string;
  diffPath: string;
  files: ReviewFile[];
  criteria: ReviewCriterion[];
}

/** Second argument of `cardrunner.resumeRun`. */
export interface ResumeGrant {
  grantRounds?: number;
  grantCostUsd?: number;
}

/** Second argument of `cardrunner.acceptChanges`: files to leave out of the commit, and why. */
export interface AcceptOptions {
  drop: string[];
  reason: string;
}

const STATES: readonly string[] = ["running", "review", "done", "failed"];

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function optStr(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** One run entry, or undefined when it lacks what identifies it (uri, a known state). */
export function parseRun(raw: unknown): RunInfo | undefined {
  if (!isObj(raw) || typeof raw.uri !== "string" || !STATES.includes(str(raw.state))) {
    return undefined;
  }
  return {
    uri: raw.uri,
    title: str(raw.title) || raw.uri.split("/").pop() || raw.uri,
    runId: str(raw.runId),
    state: raw.state as RunState,
    round: num(raw.round),
    maxRounds: num(raw.maxRounds),
    tokens: num(raw.tokens),
    costUsd: num(raw.costUsd),
    tool: optStr(raw.tool),
    reason: optStr(raw.reason),
    logPath: optStr(raw.logPath),
    commit: optStr(raw.commit),
    estimated: costEstimated(raw),
  };
}

/** The runs of a `cardrunner/runStatus` notification; malformed entries are left out. */
export function parseRunStatus(raw: unknown): RunInfo[] {
  const runs = isObj(raw) && Array.isArray(raw.runs) ? raw.runs : [];
  return runs.map(parseRun).filter((run): run is RunInfo => run !== undefined);
}

/** The sandbox mode a `cardrunner/runStatus` notification names, or undefined if none. */
export function parseSandbox(raw: unknown): string | undefined {
  return isObj(raw) && typeof raw.sandbox === "string" && raw.sandbox !== "" ? raw.sandbox : undefined;
}

function parseFile(raw: unknown): ReviewFile | undefined {
  if (!isObj(raw) || typeof raw.path !== "string" || raw.path === "") {
    return undefined;
  }
  return { path: raw.path, before: optStr(raw.before), after: str(raw.after) };
}

/** A `cardrunner/reviewRequested` notification, or undefined when it names no card. */
export function parseReviewRequested(raw: unknown): ReviewRequestedParams | undefined {
  if (!isObj(raw) || typeof raw.uri !== "string") {
    return undefined;
  }
  const files = Array.isArray(raw.files) ? raw.files : [];
  return {
    uri: raw.uri,
    runId: str(raw.runId),
    title: str(raw.title) || raw.uri.split("/").pop() || raw.uri,
    message: str(raw.message),
    diffPath: str(raw.diffPath),
    files: files.map(parseFile).filter((f): f is ReviewFile => f !== undefined),
    criteria: (Array.isArray(raw.criteria) ? raw.criteria : [])
      .filter(isObj)
      .map((c) => ({ text: str(c.text), status: str(c.status), evidence: str(c.evidence) })),
  };
}
