/**
 * The Cards view in the activity bar: the board as a tree, columns New / In Work / Review / Done /
 * Failed, each card with its live round and cost, a badge counting reviews that wait, and inline
 * Run / Cancel / Review / Resume / Show run actions keyed on the card's context value.
 *
 * Why it asks the server: the board (`cardrunner/board`) already groups cards, folds live runs in and
 * lists each card's actions, so this view is rendering only. It asks again when runs change
 * (`cardrunner/runStatus`), when a card file changes, and when the server (re)starts — debounced,
 * so a burst of events costs one request. It also sets the context keys the menus use.
 */
import type * as vscode from "vscode";
import { EMPTY_BOARD, cardDetail, contextValue, parseBoard, type Board, type BoardCard, type Column } from "./board";
import * as api from "./vscodeapi";

const REFRESH_DEBOUNCE_MS = 150;
const ICONS: Record<Column, string> = {
  New: "circle-large-outline",
  "In Work": "sync~spin",
  Review: "eye",
  Done: "pass",
  Failed: "error",
};

export type BoardSource = () => Promise<unknown>;
type Node = { kind: "column"; state: Column; count: number } | { kind: "card"; card: BoardCard };

export class CardsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private board: Board = EMPTY_BOARD;
  private timer: NodeJS.Timeout | undefined;
  private readonly changed = api.createEmitter<Node | undefined>();
  private readonly boardListeners: Array<(board: Board) => void> = [];
  readonly onDidChangeTreeData = this.changed.event;
  private readonly tree: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly source: BoardSource) {
    this.tree = api.createTreeView("cardrunner.cards", this);
    this.disposables.push(
      this.tree,
      this.changed,
      api.watchFiles("**/cards/**/*.md", () => this.refreshSoon()),
    );
  }

  /** The board last shown (the board panel and commands read it too). */
  get current(): Board {
    return this.board;
  }

  onBoard(listener: (board: Board) => void): void {
    this.boardListeners.push(listener);
  }

  refreshSoon(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), REFRESH_DEBOUNCE_MS);
  }

  async refresh(): Promise<void> {
    const raw = await this.source().catch(() => undefined);
    if (raw === undefined) {
      return; // server not running: keep what was shown
    }
    this.board = parseBoard(raw);
    const waiting = this.board.waitingReviews;
    this.tree.badge = waiting ? { value: waiting, tooltip: `${waiting} review(s) waiting` } : undefined;
    void api.setContext("cardrunner.running", this.board.running > 0);
    void api.setContext("cardrunner.reviewWaiting", waiting > 0);
    this.changed.fire(undefined);
    this.boardListeners.forEach((listener) => listener(this.board));
  }

  find(uri: string): BoardCard | undefined {
    return this.board.columns.flatMap((c) => c.cards).find((c) => c.uri === uri);
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      return this.board.columns.map((c) => ({ kind: "column", state: c.state, count: c.cards.length }));
    }
    if (node.kind === "column") {
      const column = this.board.columns.find((c) => c.state === node.state);
      return (column?.cards ?? []).map((card) => ({ kind: "card", card }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "column") {
      const open = node.state !== "Done" && node.count > 0;
      const item = api.treeItem(node.state, open ? "expanded" : "collapsed");
      item.description = String(node.count);
      item.iconPath = api.themeIcon(ICONS[node.state]);
      item.contextValue = "column";
      item.id = `column:${node.state}`;
      return item;
    }
    const card = node.card;
    const item = api.treeItem(card.title, "none");
    item.id = card.uri;
    item.description = cardDetail(card);
    // the card's text is data, never markup: no remote image, no link, no theme icon renders
    const md = (text: string): string => text.replace(/[\\`*_{}[\]()#+\-.!|<>~&$:@]/g, "\\$&");
    const lines = [`**${md(card.title)}** — ${card.state}`, md(card.path), ...card.problems.map((p) => `- ${md(p)}`)];
    item.tooltip = api.markdown(lines.join("\n\n"));
    item.iconPath = api.themeIcon(card.review ? "eye" : ICONS[card.state]);
    item.contextValue = contextValue(card);
    item.resourceUri = api.parseUri(card.uri);
    item.command = { title: "Open card", command: "vscode.open", arguments: [api.parseUri(card.uri)] };
    return item;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.disposables.forEach((d) => d.dispose());
  }
}
