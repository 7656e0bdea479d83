/**
 * The Cards view, the board panel and the card commands, wired together: New card, Open board,
 * Accept / Reject from the palette and menus, moving a card by hand, refreshing.
 *
 * Why one module: the view and the panel show the same board and run the same actions, so one
 * place decides how an action runs (through VS Code's command for the server's id, so the review
 * hooks see it: a Reject without a reason asks for one) and when the board is asked for again.
 */
import type * as vscode from "vscode";
import { demoArgv, newCard, type Column } from "./board";
import { BoardPanel } from "./boardPanel";
import { CardsView } from "./cardsView";
import type { ServerClient } from "./client";
import { cardUri } from "./commands";
import { BoardMethod, ServerCommand } from "./protocol";
import { formatArgv } from "./serverLaunch";
import type { ReviewController } from "./review";
import * as api from "./vscodeapi";

export const CardCommand = {
  openBoard: "cardrunner.client.openBoard",
  newCard: "cardrunner.client.newCard",
  refresh: "cardrunner.client.refreshCards",
  accept: "cardrunner.client.acceptChanges",
  reject: "cardrunner.client.rejectChanges",
  moveToNew: "cardrunner.client.moveToNew",
  moveToDone: "cardrunner.client.moveToDone",
  runDemo: "cardrunner.client.runDemo",
} as const;

export function registerCards(
  context: vscode.ExtensionContext,
  server: ServerClient,
  review: ReviewController,
): { view: CardsView; disposables: vscode.Disposable[] } {
  const view = new CardsView(() => server.request(BoardMethod, null));
  const runAction = (command: string, args: unknown[]): void => {
    void api.executeCommand(command, ...args).then(undefined, (err: unknown) => {
      void api.showError(`cardrunner: ${command} failed: ${String(err)}`);
    });
  };
  const move = async (uri: string | undefined, state: Column): Promise<void> => {
    if (uri) {
      await server.executeServerCommand(ServerCommand.setState, [uri, state]);
      view.refreshSoon();
    }
  };
  const panel = new BoardPanel(context.extensionUri, () => view.current, {
    action: runAction,
    move: (uri, state) => void move(uri, state),
    open: (uri) => void api.executeCommand("vscode.open", api.parseUri(uri)),
  });
  view.onBoard((board) => panel.update(board));
  const disposables = [
    view,
    panel,
    api.registerCommand(CardCommand.openBoard, () => {
      panel.show();
      void view.refresh();
    }),
    api.registerCommand(CardCommand.refresh, () => view.refresh()),
    api.registerCommand(CardCommand.newCard, () => createCard()),
    api.registerCommand(CardCommand.accept, async (arg?: unknown) => {
      const uri = cardUri(arg);
      if (uri) {
        await server.executeServerCommand(ServerCommand.acceptChanges, [uri]);
      }
    }),
    api.registerCommand(CardCommand.reject, async (arg?: unknown) => {
      const uri = cardUri(arg);
      if (uri) {
        await review.rejectAsking(uri);
      }
    }),
    api.registerCommand(CardCommand.runDemo, () => {
      const terminal = api.createTerminal("cardrunner demo");
      terminal.show();
      terminal.sendText(formatArgv(demoArgv(server.serverArgv)));
    }),
    api.registerCommand(CardCommand.moveToNew, (arg?: unknown) => move(cardUri(arg), "New")),
    api.registerCommand(CardCommand.moveToDone, (arg?: unknown) => move(cardUri(arg), "Done")),
  ];
  return { view, disposables };
}

/** Ask for a title, write `cards/<slug>.md` from the template and open it. */
async function createCard(): Promise<void> {
  const folder = api.workspaceFolderUri();
  if (!folder) {
    void api.showInfo("cardrunner: open a folder first; cards live in its cards/ folder.");
    return;
  }
  const title = await api.showInputBox({
    title: "New card",
    prompt: "The card's title: what should change, in a few words",
    validateInput: (value) => (value.trim() ? undefined : "A card needs a title"),
  });
  if (!title?.trim()) {
    return;
  }
  const { fileName, text } = newCard(title.trim());
  const target = api.joinPath(folder, "cards", fileName);
  if (await api.fileExists(target.fsPath)) {
    void api.showWarning(`cardrunner: cards/${fileName} exists already.`);
    return;
  }
  await api.createAndOpen(target, text);
}
