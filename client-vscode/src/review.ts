/**
 * Reviewing a run's changes in VS Code: native diff editors, a per-file keep/drop pick, then
 * "Accept & commit" or "Reject with a reason…", sent to the server as its review commands.
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
import {
  acceptArguments,
  diffPlan,
  evidenceFolds,
  evidenceText,
  rejectArguments,
  reviewLabel,
  type DiffEntry,
} from "./reviewPlan";
import type { Transition } from "./statusItems";
import * as api from "./vscodeapi";

/** The run-start side of a diff: the path is the real file's, the query names the copy read. */
const BEFORE_SCHEME = "cardrunner-before";
/** An isolated run's file, served under its place in the repository (not its worktree path). */
const AFTER_SCHEME = "cardrunner-after";
/** The side that does not exist (before a new file, after a deleted one), at the real path. */
const EMPTY_SCHEME = "cardrunner-empty";
const EVIDENCE_SCHEME = "cardrunner-evidence";
/** The evidence's language: word wrap on (package.json's configurationDefaults). */
const EVIDENCE_LANGUAGE = "cardrunner-evidence";
/** The diff's share of the editor height, the evidence below it. */
const REVIEW_SHARE = 0.68;
const MAX_DIFFS = 20;

interface FileItem extends vscode.QuickPickItem {
  entry: DiffEntry;
}

export class ReviewController implements vscode.Disposable {
  private readonly pending = new Map<string, ReviewRequestedParams>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Per card: left sides (run-start copies or empty documents) of the diff editors opened. */
  private readonly opened = new Map<string, Set<string>>();
  /** Per card: the title of the multi-file diff editor opened for its review. */
  private readonly multi = new Map<string, string>();
  /** Cards whose file pick is on screen now (a second Review only brings the diffs forward). */
  private readonly picking = new Set<string>();

  constructor(
    private readonly server: ServerClient,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      api.registerContentProvider(EMPTY_SCHEME, () => ""),
      api.registerContentProvider(BEFORE_SCHEME, (uri) => api.readText(uri.query)),
      api.registerContentProvider(AFTER_SCHEME, (uri) => api.readText(uri.query)),
      api.registerContentProvider(EVIDENCE_SCHEME, (uri) => {
        const review = this.pending.get(decodeURIComponent(uri.query));
        return review ? evidenceText(review) : "This review has been decided.";
      }),
      api.registerFoldingRanges(EVIDENCE_LANGUAGE, evidenceFolds),
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
    const shown = await this.focusOpen(review.uri);
    if (!shown) {
      await this.openDiffs(review.uri, entries);
      await this.openEvidence(review);
    }
    if (this.picking.has(review.uri)) {
      return; // its file pick is on screen already: one review, brought forward
    }
    this.picking.add(review.uri);
    const kept = await this.pickFiles(review, entries).finally(() => this.picking.delete(review.uri));
    if (kept === undefined) {
      this.log.info(`review of ${review.title} left open (nothing sent)`);
      return;
    }
    await this.decide(review, kept);
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

  /** Each criterion's evidence, below the diff (focus stays on the diff). */
  private async openEvidence(review: ReviewRequestedParams): Promise<void> {
    const name = encodeURIComponent(`${review.title.replace(/[^\w .-]+/g, " ").trim()} — evidence`);
    const uri = api.parseUri(`${EVIDENCE_SCHEME}:/${name}?${encodeURIComponent(review.uri)}`);
    this.opened.get(review.uri)?.add(uri.toString());
    await api.openBeside(uri, EVIDENCE_LANGUAGE).then(undefined, (err: unknown) => {
      this.log.warn(`could not show the evidence: ${String(err)}`);
    });
    // A laptop's 1280 px: beside the diff, the evidence cut the code at ~25 characters; below
    // it, the code keeps the editor's whole width, and the evidence's criteria fold away.
    await api.stackGroups(REVIEW_SHARE).then(undefined, (err: unknown) => {
      this.log.info(`could not size the evidence column: ${String(err)}`);
    });
  }

  /**
   * [the file, its before side, its after side] as the diff editors take them, all three at the
   * file's path: the before side is the run-start copy's content served under that path
   * (BEFORE_SCHEME), so the editor shows a modification of the file, not a rename from the copy.
   */
  private sides(card: string, entry: DiffEntry): [vscode.Uri, vscode.Uri, vscode.Uri] {
    // An isolated run's files live in .cardrunner/worktrees/<run id>/: VS Code labels a diff by
    // its modified side, so both sides are served under the file's place in the repository.
    const at = reviewLabel(entry, api.workspaceFolderPath());
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
    await api.closeDiffEditors(opened, multi).then(undefined, (err: unknown) => {
      this.log.warn(`could not close the review's diff editors: ${String(err)}`);
    });
  }

  /** The files to keep (all picked at first); undefined when the user backs out. */
  private pickFiles(review: ReviewRequestedParams, entries: DiffEntry[]): Promise<string[] | undefined> {
    const pick = api.createQuickPick<FileItem>();
    pick.title = `Review "${review.title}": keep which files in the commit?`;
    pick.placeholder = "Unpick files to leave them out of the commit, then press Enter";
    pick.canSelectMany = true;
    pick.ignoreFocusOut = true;
    pick.items = entries.map((entry) => ({
      label: entry.path,
      description: entry.status,
      entry,
      buttons: [{ iconPath: api.themeIcon("diff"), tooltip: "Open diff" }],
    }));
    pick.selectedItems = pick.items;
    return new Promise((resolve) => {
      let done = false;
      pick.onDidTriggerItemButton((e) => void this.openDiff(review.uri, e.item.entry, false));
      pick.onDidAccept(() => {
        done = true;
        resolve(pick.selectedItems.map((item) => item.entry.path));
        pick.hide();
      });
      pick.onDidHide(() => {
        if (!done) {
          resolve(undefined);
        }
        pick.dispose();
      });
      pick.show();
    });
  }

  private async decide(review: ReviewRequestedParams, kept: string[]): Promise<void> {
    const total = review.files.length;
    const accept = {
      label: "$(check) Accept & commit",
      description: `${kept.length} of ${total} files`,
      action: "accept",
    };
    const reject = {
      label: "$(close) Reject with a reason…",
      description: "the reason goes back to the model",
      action: "reject",
    };
    const whole = {
      label: "$(file-code) Drop single hunks, comment lines…",
      description: "in the review's .diff: lenses per hunk, # lines are comments",
      action: "diff",
    };
    const items = review.diffPath ? [accept, reject, whole] : [accept, reject];
    const choice = await api.showQuickPick(items, { title: `Review "${review.title}"`, ignoreFocusOut: true });
    if (choice?.action === "accept") {
      await this.accept(review, kept);
    } else if (choice?.action === "reject") {
      await this.reject(review);
    } else if (choice?.action === "diff") {
      await api.openFile(review.diffPath);
    }
  }

  private async accept(review: ReviewRequestedParams, kept: string[]): Promise<void> {
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
