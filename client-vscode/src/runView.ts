/**
 * The live run view: a read-only document per card that reads as `cardrunner log` prints a run,
 * with the running command's output (test results as they pass) at the end, updated while the run
 * goes on. "Show run" opens it; the raw JSONL is one click away in its editor title.
 *
 * Why a virtual document: the summary comes from the server (`cardrunner/runSummary`), so it is
 * the same text in every editor; VS Code re-asks for it whenever `cardrunner/runStatus` says the
 * run changed, and a document gives search, copy and scrolling for free.
 */
import type * as vscode from "vscode";
import { RunSummaryMethod, type RunInfo } from "./protocol";
import { viewsToRefresh } from "./statusItems";
import * as api from "./vscodeapi";

export const RUN_SCHEME = "cardrunner-run";

interface Summary {
  text: string;
  logPath: string | null;
  live: boolean;
}

function parseSummary(raw: unknown): Summary {
  const obj = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  return {
    text: typeof obj.text === "string" ? obj.text : typeof obj.error === "string" ? obj.error : "no run yet",
    logPath: typeof obj.logPath === "string" ? obj.logPath : null,
    live: obj.live === true,
  };
}

export class RunDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = api.createEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** Card URI → the summary last shown (for the raw log and to know which documents are live). */
  private readonly shown = new Map<string, Summary>();
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly request: (method: string, params: unknown) => Promise<unknown>) {
    this.disposables = [this.changed, api.registerContentProvider(RUN_SCHEME, this)];
  }

  /** The document URI of a card's run view (the card's URI rides in the query). */
  static uriFor(cardUri: string, title: string): vscode.Uri {
    const name = title.replace(/[^\w .-]+/g, " ").trim() || "run";
    return api.parseUri(`${RUN_SCHEME}:/${encodeURIComponent(`${name} — run`)}?${encodeURIComponent(cardUri)}`);
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const card = decodeURIComponent(uri.query);
    const summary = parseSummary(await this.request(RunSummaryMethod, { uri: card }).catch(() => undefined));
    this.shown.set(card, summary);
    return summary.text;
  }

  async open(cardUri: string, title: string): Promise<void> {
    await api.openDocument(RunDocuments.uriFor(cardUri, title));
  }

  /** Runs changed: re-read the open run views that can have changed (`viewsToRefresh`). */
  refresh(runs: readonly RunInfo[]): void {
    const open = new Map<string, vscode.Uri>();
    for (const uri of api.openDocumentUris(RUN_SCHEME)) {
      const card = RunDocuments.cardOf(uri);
      if (card) {
        open.set(card, uri);
      }
    }
    for (const card of viewsToRefresh([...open.keys()], (c) => this.shown.get(c)?.live, runs)) {
      this.changed.fire(open.get(card)!);
    }
  }

  /** The card a run view document is about (undefined for other documents). */
  static cardOf(uri: vscode.Uri): string | undefined {
    return uri.scheme === RUN_SCHEME && uri.query ? decodeURIComponent(uri.query) : undefined;
  }

  /** The JSONL log behind a run view document, as the server last said. */
  logPathOf(uri: vscode.Uri): string | null {
    const card = RunDocuments.cardOf(uri);
    return (card && this.shown.get(card)?.logPath) || null;
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
