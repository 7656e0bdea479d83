/**
 * The Kanban board as a webview: five columns, each card with its live round and cost and the
 * buttons the server offers for it (the same actions as its lenses); dragging a card between New,
 * Done and Failed moves it by hand (`cardrunner.setState`, which edits its front matter).
 *
 * Why a webview and how: a board needs columns side by side, which no tree gives. State comes
 * from the extension, never kept in the page (boardPage.ts): the page renders what it is sent and
 * posts back intents, which run only when the board offers them (board.ts `handleBoardMessage`).
 */
import { randomBytes } from "node:crypto";
import type * as vscode from "vscode";
import { handleBoardMessage, type Board, type BoardIntents } from "./board";
import { boardHtml, pageBoard } from "./boardPage";
import * as api from "./vscodeapi";

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
    panel.webview.onDidReceiveMessage((message: unknown) => this.received(message));
    panel.onDidDispose(() => (this.panel = undefined));
    this.panel = panel;
  }

  /** Send the board to the page (called whenever the Cards view got a new one). */
  update(board: Board): void {
    void this.panel?.webview.postMessage({ type: "board", board: pageBoard(board) });
  }

  /** The page's message, carried out only if the board offers it (`handleBoardMessage`). */
  private received(message: unknown): void {
    handleBoardMessage(this.board(), message, this.intents, () => this.update(this.board()));
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
