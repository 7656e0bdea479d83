/**
 * A run as the run view draws it: the `timeline` of `cardrunner/runSummary` (docs/lsp-extensions.md),
 * parsed defensively, and the few words the view puts around it (the budget line, the result).
 *
 * Why pure: the server folds the run; the view only draws it. Parsing and wording without
 * `vscode` are unit-tested under plain Node, and an answer from an older or newer server never
 * breaks the page — anything malformed is left out.
 */
import { costEstimated } from "./protocol";
import { formatCost, formatRound, formatTokens } from "./statusItems";

export interface TimelineCall {
  id: string;
  name: string;
  arguments: string;
  result: string;
  isError: boolean;
  ms: number | null;
}

export interface TimelineRound {
  round: number;
  text: string;
  costUsd: number;
  calls: TimelineCall[];
}

export interface TimelineCriterion {
  text: string;
  status: string;
  evidence: string;
}

export interface Timeline {
  title: string;
  state: string;
  reason: string | null;
  detail: string;
  commit: string | null;
  round: number;
  maxRounds: number;
  tokens: number;
  costUsd: number;
  maxCostUsd: number | null;
  omittedRounds: number;
  rounds: TimelineRound[];
  criteria: TimelineCriterion[];
  tool: string | null;
  output: string[];
  /** Costs are estimates (a replayed run, or usage the endpoint did not report). */
  estimated: boolean;
}

/** What the page is sent: the timeline (null: no run yet, or its log unreadable) and the log. */
export interface RunPage {
  cardUri: string;
  live: boolean;
  logPath: string | null;
  message: string;
  timeline: Timeline | null;
  budget: string;
  result: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const optStr = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function parseCall(raw: Obj): TimelineCall {
  return {
    id: str(raw.id),
    name: str(raw.name),
    arguments: str(raw.arguments),
    result: str(raw.result),
    isError: raw.isError === true,
    ms: typeof raw.ms === "number" ? raw.ms : null,
  };
}

function parseRound(raw: Obj): TimelineRound {
  return {
    round: num(raw.round),
    text: str(raw.text),
    costUsd: num(raw.costUsd),
    calls: list(raw.calls).filter(isObj).map(parseCall),
  };
}

/** The timeline of a `cardrunner/runSummary` answer, or null when it has none. */
export function parseTimeline(raw: unknown): Timeline | null {
  if (!isObj(raw)) {
    return null;
  }
  const max = num(raw.maxCostUsd);
  return {
    title: str(raw.title),
    state: str(raw.state),
    reason: optStr(raw.reason),
    detail: str(raw.detail),
    commit: optStr(raw.commit),
    round: num(raw.round),
    maxRounds: num(raw.maxRounds),
    tokens: num(raw.tokens),
    costUsd: num(raw.costUsd),
    maxCostUsd: max > 0 ? max : null,
    omittedRounds: num(raw.omittedRounds),
    rounds: list(raw.rounds).filter(isObj).map(parseRound),
    criteria: list(raw.criteria)
      .filter(isObj)
      .map((c) => ({ text: str(c.text), status: str(c.status), evidence: str(c.evidence) })),
    tool: optStr(raw.tool),
    output: list(raw.output).filter((line): line is string => typeof line === "string"),
    estimated: costEstimated(raw),
  };
}

/** "round 3/12 · 9.1k tok · $0.02 of $2.00 ($1.98 left)": what the run has used and has left. */
export function budgetLine(t: Timeline): string {
  const round = t.state === "running" || t.state === "review" ? formatRound(t) : `${t.round} rounds`;
  const spent = formatCost(t.costUsd, t.estimated);
  const money =
    t.maxCostUsd === null
      ? t.estimated
        ? spent.replace(/\)$/, ", no cost limit)")
        : `${spent} (no cost limit)`
      : `${spent} of ${formatCost(t.maxCostUsd)} (${formatCost(t.maxCostUsd - t.costUsd)} left)`;
  const phase = t.state === "review" ? ["waiting for your review"] : [];
  return [round, formatTokens(t.tokens), money, ...phase].join(" · ");
}

/** How the run ended, in a line ("" while it goes on). */
export function resultLine(t: Timeline): string {
  if (t.state === "done" || t.state === "verified") {
    return `${t.state === "done" ? "Done" : "Verified"}${t.commit ? ` · commit ${t.commit.slice(0, 10)}` : ""}`;
  }
  if (t.state === "failed") {
    return `Failed${t.reason ? ` (${t.reason})` : ""}${t.detail ? `: ${t.detail}` : ""}`;
  }
  return "";
}

/** The page's data from a `cardrunner/runSummary` answer (asked with `"timeline": true`). */
export function runPage(cardUri: string, raw: unknown): RunPage {
  const obj = isObj(raw) ? raw : {};
  const timeline = parseTimeline(obj.timeline);
  const message = timeline ? "" : str(obj.error) || str(obj.text) || "no run yet";
  return {
    cardUri,
    live: obj.live === true,
    logPath: optStr(obj.logPath),
    message,
    timeline,
    budget: timeline ? budgetLine(timeline) : "",
    result: timeline ? resultLine(timeline) : "",
  };
}
