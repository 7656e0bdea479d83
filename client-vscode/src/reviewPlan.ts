/**
 * The decisions of a review, as data: which diffs to open, and the exact arguments of the server
 * commands that accept, reject or resume.
 *
 * Why pure: the argument shapes are a contract with the server (`cardrunner.acceptChanges` takes
 * `[uri]` or `[uri, {drop, reason}]`, `cardrunner.rejectChanges` takes `[uri, reason]`), so they are
 * built in one place and unit-tested; review.ts only drives the diff editors, reviewView.ts the
 * list beside them (its rows are worded in reviewTree.ts).
 */
import type { AcceptOptions, ResumeGrant, ReviewFile } from "./protocol";

export type FileStatus = "added" | "deleted" | "modified";

/**
 * One diff editor to open; a null side is shown as an empty document. Both sides are shown under
 * `file`, the real file's path (the before copy's content, not its path): an editor that sees
 * two paths shows a rename, and the change is a modification of the file itself.
 */
export interface DiffEntry {
  path: string;
  status: FileStatus;
  left: string | null;
  right: string | null;
  file: string;
  title: string;
}

/** How each file changed, given whether its `after` path still exists. */
export function fileStatus(file: ReviewFile, afterExists: boolean): FileStatus {
  if (file.before === null) {
    return "added";
  }
  return afterExists ? "modified" : "deleted";
}

/** The diff editors for a review: before ↔ after, empty on the side that does not exist. */
export function diffPlan(files: ReviewFile[], afterExists: (path: string) => boolean): DiffEntry[] {
  return files.map((file) => {
    const status = fileStatus(file, file.after !== "" && afterExists(file.after));
    const label = status === "added" ? "new file" : status === "deleted" ? "deleted" : "before ↔ after";
    return {
      path: file.path,
      status,
      left: status === "added" ? null : file.before,
      right: status === "deleted" ? null : file.after,
      file: file.after,
      title: `${file.path} (${label})`,
    };
  });
}

/** Arguments of `cardrunner.acceptChanges`: `[uri]` when every file is kept. */
export function acceptArguments(
  uri: string,
  files: readonly ReviewFile[],
  kept: readonly string[],
  reason = "",
): [string] | [string, AcceptOptions] {
  const keep = new Set(kept);
  const drop = files.map((f) => f.path).filter((p) => !keep.has(p));
  if (drop.length === 0) {
    return [uri];
  }
  const why = reason.trim() || "left out by the reviewer";
  return [uri, { drop, reason: why }];
}

/** Arguments of `cardrunner.rejectChanges`; undefined when no reason was given (it goes to the model). */
export function rejectArguments(uri: string, reason: string | undefined): [string, string] | undefined {
  const text = reason?.trim();
  return text ? [uri, text] : undefined;
}

/**
 * Parse the "grant more budget" answer of the resume prompt: "" (none), "20" (rounds),
 * "20 $1.50" or "$1.50" (rounds and/or USD). Returns undefined for input that is not understood.
 */
export function parseGrant(input: string): ResumeGrant | undefined {
  const grant: ResumeGrant = {};
  for (const token of input
    .trim()
    .split(/[\s,]+/)
    .filter((t) => t !== "")) {
    const usd = /^\$(\d+(?:\.\d+)?)$/.exec(token);
    if (usd?.[1] !== undefined && grant.grantCostUsd === undefined) {
      grant.grantCostUsd = Number(usd[1]);
    } else if (/^\d+$/.test(token) && grant.grantRounds === undefined) {
      grant.grantRounds = Number(token);
    } else {
      return undefined;
    }
  }
  return grant;
}

/** Arguments of `cardrunner.resumeRun`: `[uri]`, or `[uri, grant]` when something is granted. */
export function resumeArguments(uri: string, grant: ResumeGrant): [string] | [string, ResumeGrant] {
  return grant.grantRounds === undefined && grant.grantCostUsd === undefined ? [uri] : [uri, grant];
}

const WORKTREE = /^(.*?)[\\/]\.cardrunner[\\/]worktrees[\\/][^\\/]+[\\/]/;

/**
 * The path a diff is labelled with: an isolated run's files live in
 * `.cardrunner/worktrees/<run id>/…`, an internal path the reviewer need not read; the label is
 * the file's place in the repository instead (the sides keep the real paths). The repository is
 * the one the worktree lies in, not the editor's folder: opened at a monorepo package's folder,
 * the server serves the monorepo root, and the folder would have put the package in twice.
 */
export function reviewLabel(entry: Pick<DiffEntry, "file" | "path">): string {
  const repository = WORKTREE.exec(entry.file)?.[1];
  return repository === undefined ? entry.file : `${repository}/${entry.path}`;
}
