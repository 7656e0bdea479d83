/**
 * The review list in the cardrunner side bar, beside the diff: Accept & commit / Reject / the
 * `.diff` on top, then the files (ticked: kept in the commit; click one for its diff), then the
 * acceptance criteria, each folding its evidence.
 *
 * Why a tree view: it sits beside the editor area instead of over it (a QuickPick hid the diff it
 * asked about) and gives the evidence room without taking the code's width. It holds the one
 * review on screen; review.ts owns the pending reviews and sends the decisions.
 */
import type * as vscode from "vscode";
import type { ReviewRequestedParams } from "./protocol";
import type { DiffEntry } from "./reviewPlan";
import {
  actionRows,
  criteriaHeading,
  criterionRow,
  evidenceLines,
  fileRow,
  filesHeading,
  type ActionRow,
  type FileStats,
  type ReviewAction,
  type TextRow,
} from "./reviewTree";
import * as api from "./vscodeapi";

export const REVIEW_VIEW = "cardrunner.review";
/** Context key: a review is on screen (its title buttons show). */
const SHOWN_KEY = "cardrunner.reviewShown";
const DECIDE = "cardrunner.client.reviewDecide";
const OPEN_FILE = "cardrunner.client.reviewOpenFile";

type Node =
  | { kind: "action"; row: ActionRow }
  | { kind: "files" }
  | { kind: "file"; entry: DiffEntry }
  | { kind: "criteria" }
  | { kind: "criterion"; index: number }
  | { kind: "evidence"; index: number; line: number; text: string };

interface Shown {
  review: ReviewRequestedParams;
  entries: DiffEntry[];
  stats: Map<string, FileStats>;
  kept: Set<string>;
}

export interface ReviewViewHandlers {
  decide(review: ReviewRequestedParams, action: ReviewAction, kept: string[]): void;
  openFile(review: ReviewRequestedParams, entry: DiffEntry): void;
}

export class ReviewView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private shown: Shown | undefined;
  private readonly changed = api.createEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly tree: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(handlers: ReviewViewHandlers) {
    this.tree = api.createTreeView(REVIEW_VIEW, this);
    const act = (action: ReviewAction): void => {
      if (this.shown) {
        handlers.decide(this.shown.review, action, this.kept());
      }
    };
    this.disposables.push(
      this.tree,
      this.changed,
      this.tree.onDidChangeCheckboxState((e) => this.onChecked(e.items)),
      api.registerCommand(DECIDE, (action: unknown) => act(action as ReviewAction)),
      api.registerCommand("cardrunner.client.reviewAccept", () => act("accept")),
      api.registerCommand("cardrunner.client.reviewReject", () => act("reject")),
      api.registerCommand(OPEN_FILE, (path: unknown) => {
        const entry = this.shown?.entries.find((e) => e.path === path);
        if (this.shown && entry) {
          handlers.openFile(this.shown.review, entry);
        }
      }),
    );
  }

  /** Show a review (the same review again keeps what was unticked). */
  show(review: ReviewRequestedParams, entries: DiffEntry[], stats: Map<string, FileStats>): void {
    const same = this.shown?.review.uri === review.uri && this.shown.review.runId === review.runId;
    const kept = same && this.shown ? this.shown.kept : new Set(entries.map((e) => e.path));
    this.shown = { review, entries, stats, kept };
    this.tree.description = review.title; // the title would be title-cased in the header
    void api.setContext(SHOWN_KEY, true);
    this.changed.fire(undefined);
  }

  /** The card's review was decided or its run ended: the list empties. */
  clear(card: string): void {
    if (this.shown?.review.uri !== card) {
      return;
    }
    this.shown = undefined;
    this.tree.description = undefined;
    void api.setContext(SHOWN_KEY, false);
    this.changed.fire(undefined);
  }

  /** Open the side bar on the list (the diff editor opened next takes the focus back). */
  async reveal(): Promise<void> {
    await api.executeCommand(`${REVIEW_VIEW}.focus`);
  }

  kept(): string[] {
    return this.shown ? this.shown.entries.map((e) => e.path).filter((p) => this.shown?.kept.has(p)) : [];
  }

  private onChecked(items: ReadonlyArray<[Node, vscode.TreeItemCheckboxState]>): void {
    for (const [node, state] of items) {
      if (node.kind === "file" && this.shown) {
        if (api.isChecked(state)) {
          this.shown.kept.add(node.entry.path);
        } else {
          this.shown.kept.delete(node.entry.path);
        }
      }
    }
    this.changed.fire(undefined); // the counts in Accept and Files change
  }

  getChildren(node?: Node): Node[] {
    const shown = this.shown;
    if (!shown) {
      return [];
    }
    if (!node) {
      const actions = actionRows(shown.review, shown.kept.size).map((row): Node => ({ kind: "action", row }));
      return [...actions, { kind: "files" }, { kind: "criteria" }];
    }
    if (node.kind === "files") {
      return shown.entries.map((entry) => ({ kind: "file", entry }));
    }
    if (node.kind === "criteria") {
      return shown.review.criteria.map((_, index) => ({ kind: "criterion", index }));
    }
    if (node.kind === "criterion") {
      const evidence = shown.review.criteria[node.index]?.evidence ?? "";
      return evidenceLines(evidence).map((text, line) => ({ kind: "evidence", index: node.index, line, text }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const shown = this.shown;
    const text = (row: TextRow, state: "expanded" | "collapsed" | "none"): vscode.TreeItem => {
      const item = api.treeItem(row.label, state);
      item.description = row.description;
      item.tooltip = row.tooltip;
      return item;
    };
    switch (node.kind) {
      case "action": {
        const item = api.treeItem(node.row.label, "none");
        item.id = `action:${node.row.action}`;
        item.description = node.row.description;
        item.iconPath = api.themeIcon(node.row.icon);
        item.tooltip = node.row.tooltip;
        item.command = { title: node.row.label, command: DECIDE, arguments: [node.row.action] };
        return item;
      }
      case "files": {
        const item = text(filesHeading(shown?.kept.size ?? 0, shown?.entries.length ?? 0), "expanded");
        item.id = "files";
        return item;
      }
      case "file": {
        const kept = shown?.kept.has(node.entry.path) ?? true;
        const item = text(fileRow(node.entry, shown?.stats.get(node.entry.path), kept), "none");
        item.id = `file:${node.entry.path}`;
        item.checkboxState = api.checkbox(kept);
        item.command = { title: "Open diff", command: OPEN_FILE, arguments: [node.entry.path] };
        return item;
      }
      case "criteria": {
        const item = text(criteriaHeading(shown?.review.criteria ?? []), "expanded");
        item.id = "criteria";
        return item;
      }
      case "criterion": {
        const criterion = shown?.review.criteria[node.index];
        const item = criterion ? text(criterionRow(criterion, node.index), "collapsed") : api.treeItem("?", "none");
        item.id = `criterion:${node.index}`;
        return item;
      }
      case "evidence": {
        const item = api.treeItem(node.text, "none");
        item.id = `evidence:${node.index}:${node.line}`;
        item.tooltip = shown?.review.criteria[node.index]?.evidence;
        return item;
      }
    }
  }

  dispose(): void {
    void api.setContext(SHOWN_KEY, false);
    this.disposables.forEach((d) => d.dispose());
  }
}
