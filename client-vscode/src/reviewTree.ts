/**
 * The rows of the review list that stands beside the diff (reviewView.ts): the decisions, the
 * files with how much of each changed, the acceptance criteria with their evidence folded below.
 *
 * Why a list beside the diff, not a QuickPick over it: a QuickPick covers the code it asks about,
 * and the evidence shown as a third editor cut a laptop's code at ~25 characters. In the side bar
 * the diff keeps the editor area. Why pure: the wording (numbering from 1, as the card does;
 * hunk counts read from the review's own `.diff`) is unit-tested under Node without VS Code.
 */
import type { ReviewCriterion, ReviewRequestedParams } from "./protocol";
import type { DiffEntry } from "./reviewPlan";

/** How much of one file changed, as the review's unified diff says. */
export interface FileStats {
  hunks: number;
  added: number;
  removed: number;
}

export type ReviewAction = "accept" | "reject" | "diff";

export interface ActionRow {
  action: ReviewAction;
  label: string;
  description: string;
  icon: string;
  tooltip: string;
}

export interface TextRow {
  label: string;
  description: string;
  tooltip: string;
}

/** Evidence is wrapped to fit the side bar's default width at 1280 px, three levels deep (its
 * rows there showed about 36 characters); the whole text is in the row's hover. */
export const EVIDENCE_WIDTH = 36;
const MARK: Record<string, string> = { verified: "✓", failed: "✗", pending: "…" };

/**
 * Per file of a unified git diff (`diff --git a/x b/x`, `+++ b/x`): hunks and changed lines.
 * Lines starting with `#` (the reviewer's comments in the `.diff`) are not changes.
 */
export function diffStats(diff: string): Map<string, FileStats> {
  const stats = new Map<string, FileStats>();
  let current: FileStats | undefined;
  let inHunk = false;
  for (const line of diff.split("\n")) {
    const header = /^diff --git a\/(.+?) b\/(.+)$/.exec(line);
    if (header?.[2] !== undefined) {
      current = { hunks: 0, added: 0, removed: 0 };
      stats.set(header[2], current);
      inHunk = false;
    } else if (!inHunk && /^\+\+\+ b\//.test(line)) {
      const path = line.slice("+++ b/".length);
      current = stats.get(path) ?? { hunks: 0, added: 0, removed: 0 };
      stats.set(path, current);
    } else if (current && line.startsWith("@@")) {
      current.hunks += 1;
      inHunk = true;
    } else if (current && inHunk && line.startsWith("+")) {
      current.added += 1;
    } else if (current && inHunk && line.startsWith("-")) {
      current.removed += 1;
    }
  }
  return stats;
}

/** The decisions, first in the list: they are what the reviewer came for. */
export function actionRows(review: ReviewRequestedParams, kept: number): ActionRow[] {
  const total = review.files.length;
  const message = review.message.trim();
  const rows: ActionRow[] = [
    {
      action: "accept",
      label: "Accept & commit",
      description: `${kept} of ${total} ${total === 1 ? "file" : "files"}`,
      icon: "check",
      // the commit message in a hover: as a row it took half the list's height
      tooltip: message ? `Commit the ticked files as:\n\n${message}` : "Commit the ticked files",
    },
    {
      action: "reject",
      label: "Reject with a reason…",
      description: "the model is told",
      icon: "close",
      tooltip: "Your reason goes back to the model, which continues the run.",
    },
  ];
  if (review.diffPath) {
    rows.push({
      action: "diff",
      label: "Drop single hunks, comment lines…",
      description: ".diff",
      icon: "file-code",
      tooltip: "The review's .diff: a lens per hunk to drop it; # lines under a diff line go to the model.",
    });
  }
  return rows;
}

/** One file: its name, then how much changed and where it lives (labels stay repository-relative). */
export function fileRow(entry: DiffEntry, stats: FileStats | undefined, kept: boolean): TextRow {
  const slash = entry.path.lastIndexOf("/");
  const name = entry.path.slice(slash + 1);
  const folder = slash > 0 ? entry.path.slice(0, slash) : "";
  const change = stats
    ? `${stats.hunks === 1 ? "1 hunk" : `${stats.hunks} hunks`} +${stats.added} −${stats.removed}`
    : entry.status;
  const state = entry.status === "modified" ? change : `${entry.status}${stats ? ` · ${change}` : ""}`;
  return {
    label: name,
    description: [state, folder].filter((part) => part !== "").join(" · "),
    tooltip: `${entry.path} — ${entry.status}${kept ? "" : " (left out of the commit)"}`,
  };
}

export function filesHeading(kept: number, total: number): TextRow {
  return {
    label: "Files",
    description: kept === total ? `${total}, all kept` : `${kept} of ${total} kept`,
    tooltip: "Unticked files are left out of the commit; click a file to see its diff.",
  };
}

export function criteriaHeading(criteria: readonly ReviewCriterion[]): TextRow {
  const verified = criteria.filter((c) => c.status === "verified").length;
  return {
    label: "Acceptance criteria",
    description: criteria.length ? `${verified} of ${criteria.length} verified` : "none reported",
    tooltip: "Each criterion as the run left it; expand one for its evidence.",
  };
}

/** One criterion, numbered from 1 as the card lists them. */
export function criterionRow(criterion: ReviewCriterion, index: number): TextRow {
  return {
    label: `${MARK[criterion.status] ?? "?"} ${index + 1}. ${criterion.text}`,
    description: criterion.status,
    tooltip: `${index + 1}. ${criterion.text}\n\n${criterion.status}${criterion.evidence ? `: ${criterion.evidence}` : ""}`,
  };
}

/** The evidence as rows a side bar shows whole: its own lines, each wrapped at word breaks. */
export function evidenceLines(evidence: string, width = EVIDENCE_WIDTH): string[] {
  const out: string[] = [];
  for (const raw of evidence.split("\n")) {
    let line = raw.trimEnd();
    while (line.length > width) {
      const space = line.lastIndexOf(" ", width);
      const cut = space > 0 ? space : width; // a word longer than a row is cut
      out.push(line.slice(0, cut));
      line = line.slice(cut).trimStart();
    }
    if (line !== "") {
      out.push(line);
    }
  }
  return out.length ? out : ["(no evidence given)"];
}
