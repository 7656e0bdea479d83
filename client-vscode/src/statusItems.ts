/**
 * What the editor shows about runs: status bar text, tooltip lines, and state transitions.
 *
 * Why pure: the server sends the full list of runs on every change (`cardrunner/runStatus`), so the
 * view is a function of that list, and notifications are a function of two consecutive lists. Both
 * are tested under plain Node; status.ts only puts the results on screen.
 */
import type { ServerState } from "./client";
import type { RunInfo } from "./protocol";

/** "950 tok", "31.2k tok", "1.25M tok". */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) {
    return `${Math.round(tokens)} tok`;
  }
  if (tokens < 1_000_000) {
    return `${(tokens / 1000).toFixed(1)}k tok`;
  }
  return `${(tokens / 1_000_000).toFixed(2)}M tok`;
}

/**
 * "$0.18" (two decimals: a run's cost is read in cents); "~$0.18 (estimate)" when nobody was billed
 * it (a replayed run, usage the endpoint did not report) — the notation the CLI, the log and the
 * card print, so a figure reads the same wherever it is shown.
 */
export function formatCost(usd: number, estimated = false): string {
  const cost = `$${Math.max(0, usd).toFixed(2)}`;
  return estimated ? `~${cost} (estimate)` : cost;
}

/**
 * "round 7/60", "round 7" when the round limit is off (0); before the first round a run checks the
 * project's tests as they are (the baseline the CLI prints), so round 0 says that.
 */
export function formatRound(run: Pick<RunInfo, "round" | "maxRounds">): string {
  if (run.round <= 0) {
    return "baseline check";
  }
  return run.maxRounds > 0 ? `round ${run.round}/${run.maxRounds}` : `round ${run.round}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function furthest(runs: RunInfo[]): RunInfo | undefined {
  const share = (r: RunInfo): number => (r.maxRounds > 0 ? r.round / r.maxRounds : 0);
  return runs.reduce<RunInfo | undefined>(
    (best, r) =>
      best === undefined || share(r) > share(best) || (share(r) === share(best) && r.round > best.round) ? r : best,
    undefined,
  );
}

/**
 * The status bar text, e.g. "$(sync~spin) 2 cards · round 7/60 · $0.18"; undefined when nothing is
 * running or waiting for review (the item is then hidden). The round shown is the furthest run's;
 * the cost is the sum over running cards.
 */
export function statusText(runs: RunInfo[]): string | undefined {
  const running = runs.filter((r) => r.state === "running");
  const review = runs.filter((r) => r.state === "review");
  const parts: string[] = [];
  const lead = furthest(running);
  if (lead) {
    const cost = running.reduce((sum, r) => sum + r.costUsd, 0);
    const estimated = running.some((r) => r.estimated);
    parts.push(`$(sync~spin) ${plural(running.length, "card")}`, formatRound(lead), formatCost(cost, estimated));
  }
  if (review.length > 0) {
    parts.push(running.length > 0 ? `${review.length} to review` : `$(eye) ${plural(review.length, "card")} to review`);
  }
  return parts.length > 0 ? parts.join(" · ") : undefined;
}

/** One line per run for tooltips and pickers: "Title — running · round 7/60 · 31.2k tok · $0.18 · build_app". */
export function runLine(run: RunInfo): string {
  const parts = [`${run.title} — ${run.state}`];
  if (run.state === "running" || run.state === "review") {
    parts.push(formatRound(run));
  } else {
    parts.push(plural(run.round, "round"));
  }
  parts.push(formatTokens(run.tokens), formatCost(run.costUsd, run.estimated));
  if (run.state === "running" && run.tool) {
    parts.push(run.tool);
  }
  if (run.state === "review") {
    parts.push("waiting for your review");
  }
  if (run.state === "failed" && run.reason) {
    parts.push(run.reason);
  }
  if (run.state === "done" && run.commit) {
    parts.push(`commit ${run.commit.slice(0, 8)}`);
  }
  return parts.join(" · ");
}

/** The short message of a run that ended, for a notification. */
export function endedMessage(run: RunInfo): string {
  if (run.state === "done") {
    const commit = run.commit ? ` · commit ${run.commit.slice(0, 8)}` : "";
    return `✓ ${run.title}: done${commit} · ${plural(run.round, "round")} · ${formatCost(run.costUsd, run.estimated)}`;
  }
  const reason = run.reason ? `: ${run.reason}` : "";
  return `✗ ${run.title}: failed${reason} · ${plural(run.round, "round")} · ${formatCost(run.costUsd, run.estimated)}`;
}

export type TransitionKind = "enteredReview" | "leftReview" | "ended";

export interface Transition {
  kind: TransitionKind;
  run: RunInfo;
}

function key(run: RunInfo): string {
  return run.runId || run.uri;
}

/**
 * What changed between two lists. A run seen for the first time already ended (e.g. after a server
 * restart) is not reported: only changes observed while watching are.
 */
export function transitions(prev: RunInfo[], next: RunInfo[]): Transition[] {
  const before = new Map(prev.map((r) => [key(r), r]));
  const out: Transition[] = [];
  for (const run of next) {
    const old = before.get(key(run));
    if (old?.state === run.state) {
      continue;
    }
    if (old?.state === "review") {
      out.push({ kind: "leftReview", run });
    }
    if (run.state === "review") {
      out.push({ kind: "enteredReview", run });
    } else if ((run.state === "done" || run.state === "failed") && old !== undefined) {
      out.push({ kind: "ended", run });
    }
  }
  return out;
}

/**
 * The open run views worth asking the server for again after a `runStatus`: those of cards with
 * a live run, and those that last showed a live run (once more, for its end) or nothing yet. A
 * view of an ended run does not change, and re-asking for every open one on every round of
 * every other card made the editor's work grow with the number of views and the account's size.
 */
export function viewsToRefresh(
  open: readonly string[],
  lastShownLive: (card: string) => boolean | undefined,
  runs: readonly RunInfo[],
): string[] {
  const live = new Set(runs.filter((r) => r.state === "running" || r.state === "review").map((r) => r.uri));
  return open.filter((card) => live.has(card) || lastShownLive(card) !== false);
}

/** What a status bar item shows: its text, its tooltip and the command a click runs. */
export interface ItemLook {
  text: string;
  tooltip: string;
  command: { title: string; command: string };
}

/** VS Code's own command that opens the Workspace Trust editor, whose Trust button trusts the folder. */
export const MANAGE_TRUST = "workbench.trust.manage";

/**
 * The sign that stays in the status bar while the folder is untrusted and so no server runs;
 * undefined in every other state (the item is then hidden). Why a status bar item besides the
 * warning that says the same: VS Code hides a notification after a few seconds (it is then only
 * in the bell), and a user who looks for ▶ Run card later would find no word why it is missing.
 */
export function restrictedSign(state: ServerState): ItemLook | undefined {
  if (state !== "restricted") {
    return undefined;
  }
  return {
    text: "$(shield) cardrunner: Restricted Mode",
    tooltip:
      "This folder is in Restricted Mode (not trusted), so cardrunner starts no server: it would run the " +
      "folder's own programs (its Python environment, build and test commands, MCP servers). Cards show no " +
      "▶ Run card until you trust the folder. Click to manage Workspace Trust.",
    command: { title: "Manage Workspace Trust", command: MANAGE_TRUST },
  };
}
