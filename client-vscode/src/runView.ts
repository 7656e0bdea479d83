/**
 * The run view: a webview per card that draws its run as it goes — one row per round with the
 * model's narration and its tool calls (collapsed, expandable; the running call's output
 * streaming), the criteria ticking as evidence is accepted, cost and budget left — and a finished
 * run the same way, read back from its log. "Show run" opens it; ■ Cancel, Review and the raw
 * JSONL log are buttons in it.
 *
 * Why a webview: a run is rows that fold and tick, which a text document cannot draw. The data
 * is the server's (`cardrunner/runSummary` with `"timeline": true`), asked again whenever
 * `cardrunner/runStatus` says the run changed, one request per card in flight; the page renders
 * what it is sent and keeps only which rows the user unfolded. Theme colours, a strict CSP and a
 * nonce'd script as the board's (runViewHtml.ts).
 */
import { randomBytes } from "node:crypto";
import type * as vscode from "vscode";
import { ClientCommand, RunSummaryMethod, ServerCommand, type RunInfo } from "./protocol";
import { runPage, type RunPage } from "./runTimeline";
import { runViewHtml } from "./runViewHtml";
import { viewsToRefresh } from "./statusItems";
import * as api from "./vscodeapi";

export const RUN_VIEW_TYPE = "cardrunner.run";

type FromPage = { type: "ready" } | { type: "cancel" } | { type: "review" } | { type: "rawLog" };

interface OpenRun {
  panel: vscode.WebviewPanel;
  shown: RunPage | undefined;
  asking: boolean;
  again: boolean;
}

export interface RunViewDeps {
  extensionUri: vscode.Uri;
  request(method: string, params: unknown): Promise<unknown>;
  execute(command: string, args: unknown[]): Promise<unknown>;
}

export class RunPanels implements vscode.Disposable {
  /** Card URI → its open run view. */
  private readonly open = new Map<string, OpenRun>();

  constructor(private readonly deps: RunViewDeps) {}

  /** Show the card's run view (the open one, brought forward, if there is one). */
  show(cardUri: string, title: string): void {
    const existing = this.open.get(cardUri);
    if (existing) {
      existing.panel.reveal();
      return;
    }
    const panel = api.createWebviewPanel(RUN_VIEW_TYPE, `Run: ${title}`, this.deps.extensionUri);
    panel.iconPath = api.joinPath(this.deps.extensionUri, "media", "cards.svg");
    panel.webview.html = runViewHtml(panel.webview.cspSource, randomBytes(16).toString("base64"));
    const entry: OpenRun = { panel, shown: undefined, asking: false, again: false };
    panel.webview.onDidReceiveMessage((message: FromPage) => this.received(cardUri, message));
    panel.onDidDispose(() => this.open.delete(cardUri));
    this.open.set(cardUri, entry);
  }

  /** Runs changed: ask again for the open views that can have changed (`viewsToRefresh`). */
  refresh(runs: readonly RunInfo[]): void {
    const cards = viewsToRefresh([...this.open.keys()], (c) => this.open.get(c)?.shown?.live, runs);
    cards.forEach((card) => void this.ask(card));
  }

  /** The JSONL log of the run view in front, if one is. */
  activeLogPath(): string | null {
    const active = [...this.open.values()].find((e) => e.panel.active);
    return active?.shown?.logPath ?? null;
  }

  private async ask(card: string): Promise<void> {
    const entry = this.open.get(card);
    if (!entry) {
      return;
    }
    if (entry.asking) {
      entry.again = true; // one request per card in flight; the newest state follows it
      return;
    }
    entry.asking = true;
    try {
      const answer = await this.deps.request(RunSummaryMethod, { uri: card, timeline: true }).catch(() => undefined);
      entry.shown = runPage(card, answer);
      void entry.panel.webview.postMessage({ type: "run", run: entry.shown });
    } finally {
      entry.asking = false;
    }
    if (entry.again) {
      entry.again = false;
      await this.ask(card);
    }
  }

  private received(card: string, message: FromPage): void {
    switch (message.type) {
      case "ready":
        void this.ask(card);
        return;
      case "cancel":
        void this.deps.execute(ServerCommand.cancelRun, [card]);
        return;
      case "review":
        void api.executeCommand(ClientCommand.review, card);
        return;
      case "rawLog": {
        const path = this.open.get(card)?.shown?.logPath;
        if (path) {
          void api.openFile(path);
        }
        return;
      }
    }
  }

  dispose(): void {
    [...this.open.values()].forEach((e) => e.panel.dispose());
  }
}
