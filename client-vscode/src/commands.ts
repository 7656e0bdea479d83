/**
 * Client-side commands for the palette and menus, forwarding to the server's commands.
 *
 * Why separate ids (`cardrunner.client.*`): vscode-languageclient registers the server's own ids
 * (`cardrunner.runCard`, …) for the code lenses; registering them again would fail. The palette
 * versions add what a lens has implicitly: the card (the active editor) and, for resume, a prompt
 * for extra budget.
 */
import type * as vscode from "vscode";
import type { ServerClient } from "./client";
import { ClientCommand, ServerCommand, type RunInfo } from "./protocol";
import type { ReviewController } from "./review";
import { parseGrant, resumeArguments } from "./reviewPlan";
import { runLine } from "./statusItems";
import type { RunPanels } from "./runView";
import * as api from "./vscodeapi";

/** The card a command is about: a URI string, a `vscode.Uri`, a Cards view item, or the active editor. */
export function cardUri(arg: unknown): string | undefined {
  if (typeof arg === "string") {
    return arg;
  }
  if (arg && typeof arg === "object" && "card" in arg) {
    const card = (arg as { card?: { uri?: unknown } }).card;
    if (typeof card?.uri === "string") {
      return card.uri; // an item of the Cards view
    }
  }
  if (arg && typeof arg === "object" && "toString" in arg && "scheme" in arg) {
    return String(arg); // a vscode.Uri from a menu
  }
  const active = api.activeMarkdownUri();
  if (!active) {
    void api.showInfo("cardrunner: open a card (a Markdown file under cards/) first.");
  }
  return active;
}

export function registerCommands(
  server: ServerClient,
  review: ReviewController,
  runs: () => readonly RunInfo[],
  log: vscode.LogOutputChannel,
  docs: RunPanels,
): vscode.Disposable[] {
  const forward = (id: string, command: string) =>
    api.registerCommand(id, async (arg?: unknown) => {
      const uri = cardUri(arg);
      if (uri) {
        await server.executeServerCommand(command, [uri]);
      }
    });

  const resume = api.registerCommand(ClientCommand.resumeRun, async (arg?: unknown) => {
    const uri = cardUri(arg);
    if (!uri) {
      return;
    }
    const answer = await api.showInputBox({
      title: "Resume run: grant more budget?",
      prompt: "Empty: none. Extra rounds and/or USD, e.g. `20`, `$1.50` or `20 $1.50`.",
      validateInput: (value) => (parseGrant(value) ? undefined : "Write rounds as a number and money as $x.yy"),
    });
    const grant = answer === undefined ? undefined : parseGrant(answer);
    if (grant) {
      await server.executeServerCommand(ServerCommand.resumeRun, resumeArguments(uri, grant));
    }
  });

  const showLog = api.registerCommand(ClientCommand.showLog, async (arg?: unknown) => {
    const explicit = arg === undefined ? api.activeMarkdownUri() : cardUri(arg);
    const withLog = runs().filter((r) => r.logPath);
    const run = withLog.find((r) => r.uri === explicit) ?? (withLog.length === 1 ? withLog[0] : undefined);
    if (run) {
      return docs.show(run.uri, run.title);
    }
    if (explicit) {
      return docs.show(explicit, decodeURIComponent(explicit.split("/").pop() ?? "card"));
    }
    const pick = await api.showQuickPick(
      withLog.map((r) => ({ label: r.title, description: runLine(r), run: r })),
      { title: "cardrunner: show the log of which run?" },
    );
    return pick ? docs.show(pick.run.uri, pick.run.title) : undefined;
  });

  const rawLog = api.registerCommand(ClientCommand.openRawLog, async () => {
    const path = docs.activeLogPath();
    if (path) {
      await api.openFile(path);
    } else {
      void api.showInfo("cardrunner: open a run view (Show run) first; its raw JSONL log opens from there.");
    }
  });

  return [
    forward(ClientCommand.runCard, ServerCommand.runCard),
    forward(ClientCommand.cancelRun, ServerCommand.cancelRun),
    resume,
    showLog,
    rawLog,
    api.registerCommand(ClientCommand.review, (arg?: unknown) =>
      review.review(arg === undefined ? undefined : cardUri(arg)),
    ),
    api.registerCommand(ClientCommand.showOutput, () => log.show()),
  ];
}

/** Open a run's view (the raw JSONL is one click away in it). */
export function openLog(run: RunInfo, docs: RunPanels): void {
  docs.show(run.uri, run.title);
}
