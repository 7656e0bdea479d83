/**
 * The composition root: wires the log, the API key store, the language client, the status view,
 * the review controller and the palette commands, then starts the server.
 *
 * Why so little here: every piece is its own module with its own reason to change; activation only
 * decides who talks to whom (server notifications → status and review; API key change → restart).
 */
import type * as vscode from "vscode";
import { registerCards } from "./cards";
import { ServerClient } from "./client";
import { ServerConsent } from "./consent";
import { CARD_SELECTOR } from "./clientOptions";
import { openLog, registerCommands } from "./commands";
import { ReviewRequestedMethod, RunStatusMethod, parseRunStatus, parseSandbox } from "./protocol";
import { ReviewController } from "./review";
import { RunPanels } from "./runView";
import { ApiKeyStore } from "./secrets";
import { StatusView } from "./status";
import { MANAGE_TRUST } from "./statusItems";
import * as api from "./vscodeapi";

let server: ServerClient | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = api.createLog("cardrunner");
  const keys = new ApiKeyStore(context.secrets, log, () => server?.restartSoon("API key changed"));
  server = new ServerClient(log, keys, new ServerConsent(context.globalState));
  const client = server;
  const review = new ReviewController(client, log);
  const docs = new RunPanels({
    extensionUri: context.extensionUri,
    request: (method, params) => client.request(method, params),
    execute: (command, args) => client.executeServerCommand(command, args),
  });
  const status = new StatusView({
    showLog: (run) => openLog(run, docs),
  });

  const cards = registerCards(context, client, review);

  client.hooks = review.hooks();
  let explained = false;
  client.onStateChange((state, detail) => {
    status.setServerState(state, detail);
    if (state === "restricted" && !explained) {
      explained = true; // once a window: the status bar's sign stays after the notice is gone
      void explainRestricted(log);
    }
    if (state === "stopped" || state === "failed" || state === "restricted") {
      status.update([]); // the runs were the old process's; a new one reports its own
    } else if (state === "running") {
      cards.view.refreshSoon();
    }
  });
  client.onNotification(RunStatusMethod, (params) => {
    status.setSandbox(parseSandbox(params));
    const runs = parseRunStatus(params);
    review.onTransitions(status.update(runs));
    cards.view.refreshSoon();
    docs.refresh(runs);
  });
  client.onNotification(ReviewRequestedMethod, (params) => {
    review.onReviewRequested(params);
    cards.view.refreshSoon();
  });

  context.subscriptions.push(
    log,
    keys,
    client,
    review,
    status,
    docs,
    ...cards.disposables,
    ...registerCommands(client, review, () => status.current, log, docs),
  );
  log.info(`cardrunner ${String(context.extension.packageJSON.version)} activated`);
  // Not awaited: activation must not wait for a server that may take seconds (or never answer).
  void startWhenRelevant(client, context, log);
}

/**
 * `onLanguage:markdown` activates this extension in every workspace with a Markdown file; the
 * server starts only where cardrunner is used (a `cardrunner.toml` or `cards/*.md`), or once a
 * card is opened — never with an error about a missing server in an unrelated project.
 */
async function startWhenRelevant(
  client: ServerClient,
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
): Promise<void> {
  const start = (): void => void client.start(); // in Restricted Mode it starts nothing and says so
  if (await api.workspaceHas("{cardrunner.toml,cards/*.md}")) {
    start();
    return;
  }
  log.info("no cardrunner.toml or cards/*.md found here: the server starts once a card is opened");
  context.subscriptions.push(api.onceDocumentOpen(CARD_SELECTOR, start));
}

/**
 * Restricted Mode: the server would run the folder's own programs, so none starts (client.ts) —
 * and the user is told why there is no ▶ Run card lens, with the way to trust the folder; trust
 * starts it. The status bar keeps a sign of it (status.ts) once this notice is gone.
 */
async function explainRestricted(log: vscode.LogOutputChannel): Promise<void> {
  const pick = await api.showWarning(
    "cardrunner: this folder is in Restricted Mode, so no cardrunner server starts and cards show no ▶ Run card.\n" +
      "Trust the folder to run cards here.",
    "Trust…",
  );
  if (pick === "Trust…") {
    log.info("Trust… clicked: opening Workspace Trust");
    await api.executeCommand(MANAGE_TRUST);
  }
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
