/**
 * The Kanban board as a webview: five columns, each card with its live round and cost and the
 * buttons the server offers for it (the same actions as its lenses); dragging a card between New,
 * Done and Failed moves it by hand (`cardrunner.setState`, which edits its front matter).
 *
 * Why a webview and how: a board needs columns side by side, which no tree gives. State comes
 * from the extension, never kept in the page (boardPage.ts): the page renders what it is sent and
 * posts back intents.
 */
import { randomBytes } from "node:crypto";
import type * as vscode from "vscode";
import { canMove, type Board, type Column } from "./board";
import { boardHtml, pageBoard } from "./boardPage";
import * as api from "./vscodeapi";

export interface BoardIntents {
  action(command: string, args: unknown[]): void;
  move(uri: string, state: Column): void;
  open(uri: string): void;
}

type FromPage =
  | { type: "action"; command: string; arguments: unknown[] }
  | { type: "move"; uri: string; from: Column; to: Column }
  | { type: "open"; uri: string }
  | { type: "ready" };

export class BoardPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly board: () => Board,
    private readonly intents: BoardIntents,
  ) {}

  get visible(): boolean {
    return this.panel !== undefined;
  }

  show(): void {
    if (this.panel) {
      this.panel.reveal();
      return;
    }
    const panel = api.createWebviewPanel("cardrunner.board", "cardrunner board", this.extensionUri);
    panel.iconPath = api.joinPath(this.extensionUri, "media", "cards.svg");
    panel.webview.html = boardHtml(panel.webview.cspSource, randomBytes(16).toString("base64"));
    panel.webview.onDidReceiveMessage((message: FromPage) => this.received(message));
    panel.onDidDispose(() => (this.panel = undefined));
    this.panel = panel;
  }

  /** Send the board to the page (called whenever the Cards view got a new one). */
  update(board: Board): void {
    void this.panel?.webview.postMessage({ type: "board", board: pageBoard(board) });
  }

  private received(message: FromPage): void {
    switch (message.type) {
      case "ready":
        this.update(this.board());
        return;
      case "action":
        this.intents.action(message.command, message.arguments);
        return;
      case "move":
        if (canMove(message.from, message.to)) {
          this.intents.move(message.uri, message.to);
        }
        return;
      case "open":
        this.intents.open(message.uri);
        return;
    }
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
