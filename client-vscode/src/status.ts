/**
 * Runs and server health on screen: one status bar item for the runs, one LanguageStatusItem for
 * the server, one status bar item while Restricted Mode keeps the server from starting, and a
 * notification when a run ends.
 *
 * Why two items: the status bar item is visible in every editor while cards run in the background
 * ("$(sync~spin) 2 cards · round 7/60 · $0.18"); the language status item sits next to the card's
 * language and says whether the server is up, which is the first question when nothing happens.
 * Text and transitions come from statusItems.ts (pure); this module only shows them.
 */
import type * as vscode from "vscode";
import type { ServerState } from "./client";
import { CARD_SELECTOR } from "./clientOptions";
import { ClientCommand, type RunInfo } from "./protocol";
import {
  endedMessage,
  MANAGE_TRUST,
  restrictedSign,
  runLine,
  statusText,
  transitions,
  type Transition,
} from "./statusItems";
import * as api from "./vscodeapi";

export interface StatusActions {
  showLog(run: RunInfo): void;
}

const SHOW_OUTPUT: vscode.Command = { title: "Show output", command: ClientCommand.showOutput };

/** How the language status item looks in each server state, and what clicking it does. */
const SERVER_LOOK: Record<ServerState, { text: string; severity: keyof typeof api.Severity; command: vscode.Command }> =
  {
    starting: { text: "cardrunner: starting", severity: "information", command: SHOW_OUTPUT },
    running: { text: "cardrunner", severity: "information", command: SHOW_OUTPUT },
    stopped: { text: "cardrunner: stopped", severity: "warning", command: SHOW_OUTPUT },
    failed: {
      text: "cardrunner: not running",
      severity: "error",
      command: {
        title: "Set server command",
        command: "workbench.action.openSettings",
        arguments: ["cardrunner.server.command"],
      },
    },
    restricted: {
      text: "cardrunner: Restricted Mode",
      severity: "warning",
      command: { title: "Manage Workspace Trust", command: MANAGE_TRUST },
    },
  };

export class StatusView implements vscode.Disposable {
  private readonly bar = api.createStatusBarItem("cardrunner.runs", "cardrunner runs");
  private readonly language = api.createLanguageStatus("cardrunner.server", CARD_SELECTOR);
  /** Shown only while the folder is untrusted and so no server runs (restrictedSign). */
  private readonly restricted = api.createStatusBarItem("cardrunner.restricted", "cardrunner Restricted Mode");
  private runs: RunInfo[] = [];
  private state: ServerState = "starting";
  private sandbox: string | undefined;

  constructor(private readonly actions: StatusActions) {
    this.language.name = "cardrunner";
    this.setServerState("starting", "");
  }

  /** The runs last reported by the server. */
  get current(): readonly RunInfo[] {
    return this.runs;
  }

  setServerState(state: ServerState, detail: string): void {
    this.state = state;
    const look = SERVER_LOOK[state];
    this.language.busy = state === "starting";
    this.language.text = look.text;
    this.language.severity = api.Severity[look.severity];
    this.language.command = look.command;
    const shown = detail || (state === "running" ? (this.sandbox ?? "") : "");
    this.language.detail = shown.length > 120 ? `${shown.slice(0, 117)}…` : shown;
    const sign = restrictedSign(state);
    if (sign === undefined) {
      this.restricted.hide();
      return;
    }
    this.restricted.text = sign.text;
    this.restricted.tooltip = sign.tooltip;
    this.restricted.command = sign.command;
    this.restricted.show();
  }

  /** The sandbox mode in force, as the server names it: shown on the language status item. */
  setSandbox(sandbox: string | undefined): void {
    if (sandbox === this.sandbox) {
      return;
    }
    this.sandbox = sandbox;
    if (this.state === "running") {
      this.setServerState("running", "");
    }
  }

  /** Show a new list of runs; returns what changed since the last one. */
  update(runs: RunInfo[]): Transition[] {
    const changes = transitions(this.runs, runs);
    this.runs = runs;
    this.render();
    for (const change of changes) {
      if (change.kind === "ended") {
        void this.notifyEnded(change.run);
      }
    }
    return changes;
  }

  private render(): void {
    const text = statusText(this.runs);
    if (text === undefined) {
      this.bar.hide();
      return;
    }
    this.bar.text = text;
    // a run's line holds a card's title (a stranger's): every Markdown character escaped, as in the Cards view
    const lines = this.runs.map((run) => `- ${runLine(run).replace(/[\\`*_{}[\]()#+\-.!|<>~&$:@]/g, "\\$&")}`);
    this.bar.tooltip = api.markdown(`**cardrunner**\n\n${lines.join("\n")}`);
    const reviewing = this.runs.find((r) => r.state === "review");
    this.bar.command = reviewing
      ? { title: "Review changes", command: ClientCommand.review, arguments: [reviewing.uri] }
      : { title: "Show run log", command: ClientCommand.showLog };
    this.bar.show();
  }

  private async notifyEnded(run: RunInfo): Promise<void> {
    const message = endedMessage(run);
    const buttons = run.logPath ? ["Show log"] : [];
    const pick =
      run.state === "done" ? await api.showInfo(message, ...buttons) : await api.showWarning(message, ...buttons);
    if (pick === "Show log") {
      this.actions.showLog(run);
    }
  }

  dispose(): void {
    this.bar.dispose();
    this.language.dispose();
    this.restricted.dispose();
  }
}
