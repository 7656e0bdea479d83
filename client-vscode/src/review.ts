/**
 * Reviewing a run's changes in VS Code: native diff editors in the editor area, and beside them the
 * review list (reviewView.ts: files to keep, criteria and evidence, "Accept & commit" / "Reject
 * with a reason…"), whose decisions go to the server as its review commands.
 *
 * Why in the client: other editors get the server's `.diff` document and review question; VS Code
 * can do better with its own diff editors. The client says so at `initialize` (`nativeReview`,
 * protocol.ts), so the server sends only the custom `cardrunner/reviewRequested` notification
 * (paths of before/after copies) and this module drives the UI, answering with the review
 * commands. Pending reviews are kept per card until decided here, via a lens, or the run ends.
 */
import type * as vscode from "vscode";
import type { ServerClient } from "./client";
import type { ClientHooks } from "./clientOptions";
import { ReviewRequestedMethod, ServerCommand, parseReviewRequested, type ReviewRequestedParams } from "./protocol";
import { acceptArguments, diffPlan, rejectArguments, reviewLabel, type DiffEntry } from "./reviewPlan";
import { diffStats, type FileStats, type ReviewAction } from "./reviewTree";
import { ReviewView } from "./reviewView";
import type { Transition } from "./statusItems";
import * as api from "./vscodeapi";

/** The run-start side of a diff: the path is the real file's, the query names the copy read. */
const BEFORE_SCHEME = "cardrunner-before";
/** An isolated run's file, served under its place in the repository (not its worktree path). */
const AFTER_SCHEME = "cardrunner-after";
/** The side that does not exist (before a new file, after a deleted one), at the real path. */
const EMPTY_SCHEME = "cardrunner-empty";
const MAX_DIFFS = 20;

export class ReviewController implements vscode.Disposable {
  private readonly pending = new Map<string, ReviewRequestedParams>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Per card: left sides (run-start copies or empty documents) of the diff editors opened. */
  private readonly opened = new Map<string, Set<string>>();
  /** Per card: the title of the multi-file diff editor opened for its review. */
  private readonly multi = new Map<string, string>();
  /** The list beside the diff: files, criteria, the decisions. */
  private readonly view: ReviewView;

  constructor(
    private readonly server: ServerClient,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.view = new ReviewView({
      decide: (review, action, kept) => void this.decide(review, action, kept),
      openFile: (review, entry) =>
        void this.openDiff(review.uri, entry, false).then(undefined, (err: unknown) => {
          this.log.warn(`could not open the diff of ${entry.path}: ${String(err)}`);
        }),
    });
    this.disposables.push(
      this.view,
      api.registerContentProvider(EMPTY_SCHEME, () => ""),
      api.registerContentProvider(BEFORE_SCHEME, (uri) => api.readText(uri.query)),
      api.registerContentProvider(AFTER_SCHEME, (uri) => api.readText(uri.query)),
    );
  }

  /**
   * The server's review commands run from its lenses and code actions: the "Review changes" lens
   * (`showDiff`) opens this UI for a review it knows, a Reject without a reason asks for one, and
   * a decision made there closes the diff editors. (The server's own `.diff` document and review
   * question never come: the client said at `initialize` that it shows reviews itself.)
   */
  hooks(): ClientHooks {
    return {
      executeCommand: (command, args) => {
        const uri = typeof args[0] === "string" ? args[0] : undefined;
        if (uri && command === ServerCommand.rejectChanges && args.length === 1) {
          void this.rejectAsking(uri); // the ✗ Reject lens carries no reason: ask for one
          return true;
        }
        if (uri && (command === ServerCommand.acceptChanges || command === ServerCommand.rejectChanges)) {
          this.pending.delete(uri); // decided by a lens or code action
          void this.closeDiffs(uri);
          return false;
        }
        if (command !== ServerCommand.showDiff) {
          return false;
        }
        if (uri && this.pending.has(uri)) {
          void this.review(uri);
          return true;
        }
        return false; // no review known here: the server opens its `.diff` document
      },
    };
  }

  /** `cardrunner/reviewRequested`: remember it and offer the review. */
  onReviewRequested(raw: unknown): void {
    const review = parseReviewRequested(raw);
    if (!review) {
      this.log.warn(`ignored a malformed ${ReviewRequestedMethod} notification`);
      return;
    }
    this.pending.set(review.uri, review);
    const files = review.files.length === 1 ? "1 file" : `${review.files.length} files`;
    this.log.info(`review requested for ${review.title} (${files})`);
    const message = `cardrunner: "${review.title}" waits for review (${files}). ${review.message}`.trim();
    void api.showInfo(message, "Review", "Show log").then((pick) => {
      if (pick === "Review") {
        void this.review(review.uri);
      } else if (pick === "Show log") {
        void this.server.executeServerCommand(ServerCommand.showLog, [review.uri]);
      }
    });
  }

  /**
   * Forget the reviews of runs that ended. (Not on leaving the review state: that news travels in
   * `runStatus`, which may arrive after the *next* `reviewRequested` of the same run; decisions
   * made in this window are seen directly, in `hooks().executeCommand` and `decide`.)
   */
  onTransitions(changes: Transition[]): void {
    for (const { kind, run } of changes) {
      const review = this.pending.get(run.uri);
      if (review && kind === "ended" && (!review.runId || review.runId === run.runId)) {
        this.pending.delete(run.uri);
        void this.closeDiffs(run.uri);
      }
    }
  }

  /** Review the changes of a card (default: the active card, or the only pending review). */
  async review(uri?: string): Promise<void> {
    const target = uri ?? (await this.pickPending());
    if (!target) {
      return;
    }
    const review = this.pending.get(target);
    if (!review) {
      // No VS Code-specific data (e.g. the client started after the request): the server's diff.
      await this.server.executeServerCommand(ServerCommand.showDiff, [target]);
      return;
    }
    const present = new Set<string>();
    await Promise.all(
      review.files.map(async (f) => {
        if (f.after && (await api.fileExists(f.after))) {
          present.add(f.after);
        }
      }),
    );
    const entries = diffPlan(review.files, (path) => present.has(path));
    this.view.show(review, entries, await this.stats(review));
    await this.view.reveal().then(undefined, (err: unknown) => {
      this.log.warn(`could not show the review list: ${String(err)}`);
    });
    if (!(await this.focusOpen(review.uri))) {
      await this.openDiffs(review.uri, entries); // a second Review only brings this one forward
    }
  }

  /** Hunks and changed lines per file, from the review's `.diff` (none when it cannot be read). */
  private async stats(review: ReviewRequestedParams): Promise<Map<string, FileStats>> {
    if (!review.diffPath) {
      return new Map();
    }
    return api.readText(review.diffPath).then(diffStats, (err: unknown) => {
      this.log.info(`no hunk counts: could not read ${review.diffPath}: ${String(err)}`);
      return new Map<string, FileStats>();
    });
  }

  /** Bring the card's open review editor forward; false when none is open. */
  private async focusOpen(card: string): Promise<boolean> {
    const opened = this.opened.get(card);
    if (!opened) {
      return false;
    }
    return api.focusReviewTab(opened, this.multi.get(card)).then(
      (found) => found,
      (err: unknown) => (this.log.warn(`could not bring the review forward: ${String(err)}`), false),
    );
  }

  private async pickPending(): Promise<string | undefined> {
    const active = api.activeMarkdownUri();
    if (active && this.pending.has(active)) {
      return active;
    }
    const all = [...this.pending.values()];
    if (all.length <= 1) {
      if (all.length === 0) {
        void api.showInfo("cardrunner: no run is waiting for review.");
      }
      return all[0]?.uri;
    }
    const pick = await api.showQuickPick(
      all.map((r) => ({ label: r.title, description: `${r.files.length} files`, uri: r.uri })),
      { title: "cardrunner: which run to review?" },
    );
    return pick?.uri;
  }

  private async openDiffs(card: string, entries: DiffEntry[]): Promise<void> {
    const review = this.pending.get(card);
    const changes = entries.map((entry) => this.sides(card, entry));
    const title = `Review: ${review?.title ?? card}`;
    this.multi.set(card, title);
    if (
      await api.openChanges(title, changes).then(
        () => true,
        (err: unknown) => (
          this.log.info(`multi-file diff editor unavailable (${String(err)}); one tab per file`),
          false
        ),
      )
    ) {
      return;
    }
    const shown = entries.slice(0, MAX_DIFFS);
    for (const [i, entry] of shown.entries()) {
      await this.openDiff(card, entry, i > 0).then(undefined, (err: unknown) => {
        this.log.warn(`could not open the diff of ${entry.path}: ${String(err)}`);
      });
    }
    if (entries.length > shown.length) {
      this.log.info(`opened ${shown.length} of ${entries.length} diffs; open the others from the file list`);
    }
  }

  /**
   * [the file, its before side, its after side] as the diff editors take them, all three at the
   * file's path: the before side is the run-start copy's content served under that path
   * (BEFORE_SCHEME), so the editor shows a modification of the file, not a rename from the copy.
   */
  private sides(card: string, entry: DiffEntry): [vscode.Uri, vscode.Uri, vscode.Uri] {
    // An isolated run's files live in .cardrunner/worktrees/<run id>/: VS Code labels a diff by
    // its modified side, so both sides are served under the file's place in the repository.
    const at = reviewLabel(entry);
    const left =
      entry.left === null ? api.schemeUri(EMPTY_SCHEME, at, "before") : api.schemeUri(BEFORE_SCHEME, at, entry.left);
    const right =
      entry.right === null
        ? api.schemeUri(EMPTY_SCHEME, at, "after")
        : at === entry.file
          ? api.fileUri(entry.right)
          : api.schemeUri(AFTER_SCHEME, at, entry.right);
    const opened = this.opened.get(card) ?? new Set<string>();
    opened.add(left.toString());
    if (right.scheme === AFTER_SCHEME) {
      opened.add(right.toString()); // never the user's own file: their editor of it stays open
    }
    this.opened.set(card, opened);
    return [api.fileUri(at), left, right];
  }

  private openDiff(card: string, entry: DiffEntry, background: boolean): Thenable<unknown> {
    const [, left, right] = this.sides(card, entry);
    return api.openDiff(left, right, entry.title, background);
  }

  /** After a decision the diffs are stale (the before copies go away): close them. */
  private async closeDiffs(card: string): Promise<void> {
    const opened = this.opened.get(card) ?? new Set<string>();
    this.opened.delete(card);
    const multi = this.multi.get(card);
    this.multi.delete(card);
    this.view.clear(card);
    await api.closeDiffEditors(opened, multi).then(undefined, (err: unknown) => {
      this.log.warn(`could not close the review's diff editors: ${String(err)}`);
    });
  }

  /** A decision from the list beside the diff. */
  private async decide(review: ReviewRequestedParams, action: ReviewAction, kept: string[]): Promise<void> {
    if (!this.pending.has(review.uri)) {
      return; // decided meanwhile (a lens, another window of the list)
    }
    if (action === "accept") {
      await this.accept(review, kept);
    } else if (action === "reject") {
      await this.reject(review);
    } else {
      await api.openFile(review.diffPath);
    }
  }

  private async accept(review: ReviewRequestedParams, kept: string[]): Promise<void> {
    if (kept.length === 0 && review.files.length > 0) {
      void api.showInfo("cardrunner: every file is unticked; tick the files to commit, or Reject with a reason.");
      return;
    }
    let reason = "";
    if (kept.length < review.files.length) {
      const answer = await api.showInputBox({
        title: "Why leave these files out? (the model is told)",
        placeHolder: "e.g. unrelated formatting changes",
        ignoreFocusOut: true,
      });
      if (answer === undefined) {
        return;
      }
      reason = answer;
    }
    const args = acceptArguments(review.uri, review.files, kept, reason);
    this.pending.delete(review.uri);
    await this.server.executeServerCommand(ServerCommand.acceptChanges, args);
    await this.closeDiffs(review.uri);
  }

  /** Reject from a lens, the Cards view or the palette: ask for the reason first. */
  async rejectAsking(uri: string): Promise<void> {
    const review = this.pending.get(uri);
    await this.reject(
      review ?? {
        uri,
        runId: "",
        title: uri.split("/").pop() ?? uri,
        message: "",
        diffPath: "",
        files: [],
        criteria: [],
      },
    );
  }

  private async reject(review: ReviewRequestedParams): Promise<void> {
    const answer = await api.showInputBox({
      title: `Reject the changes of "${review.title}"`,
      prompt:
        "The reason goes back to the model, which continues the run. Empty: the # comments typed into the review's .diff.",
      ignoreFocusOut: true,
    });
    if (answer === undefined) {
      return; // Escape: the review stays open
    }
    const args = rejectArguments(review.uri, answer) ?? [review.uri];
    this.pending.delete(review.uri);
    await this.server.executeServerCommand(ServerCommand.rejectChanges, args);
    await this.closeDiffs(review.uri);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
