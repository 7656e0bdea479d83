/**
 * The language client's options: which documents, where logs go, and the middleware through which
 * the editor shapes the standard protocol (settings in the server's shape, the review lens hook).
 *
 * The server's questions are asked here too, as modal dialogs (`askQuestion`).
 *
 * Why apart from client.ts: the server's life cycle and the protocol details change for different
 * reasons; this module is the one place that says how VS Code talks to cardrunner beyond defaults.
 */
import * as readline from "node:readline";
import type { Readable } from "node:stream";
import type * as vscode from "vscode";
import {
  MessageType,
  RevealOutputChannelOn,
  type ErrorHandler,
  type LanguageClientOptions,
  type MessageActionItem,
  type ShowMessageRequestParams,
  type StaticFeature,
} from "vscode-languageclient/node";
import { initializationOptions } from "./protocol";
import { dialogOf } from "./questions";
import { StderrClassifier } from "./serverLog";
import type { ServerSettings } from "./settings";
import * as api from "./vscodeapi";

/** Markdown files under a `cards/` folder: the only documents the server is told about. */
export const CARD_SELECTOR = [{ scheme: "file", language: "markdown", pattern: "**/cards/**" }];

/**
 * Where another module takes a server command run from a lens or code action (review.ts opens
 * its native review for the "Review changes" lens). The server's generic review UI is not
 * undone here: the client says at `initialize` that it shows reviews itself (protocol.ts).
 */
export interface ClientHooks {
  /** A server command run from a lens or code action: true when handled here (not sent). */
  executeCommand?(command: string, args: unknown[]): boolean;
}

/**
 * Runs are on screen once, from one message: the status bar item (status.ts) and the run view
 * follow `cardrunner/runStatus`. A work-done progress per run put a second item in the status
 * bar, fed by other messages at other moments, and the two showed different rounds at the same
 * time. So this client does not offer `window.workDoneProgress` (registered after the built-in
 * progress feature, it has the last word on the capability); the server then shows a run in its
 * notifications, diagnostics and lenses only, and ■ Cancel is the lens and the run view's button.
 */
export const ONE_RUN_STATUS: StaticFeature = {
  fillClientCapabilities: (capabilities) => {
    capabilities.window = { ...capabilities.window, workDoneProgress: false };
  },
  initialize: () => undefined,
  getState: () => ({ kind: "static" }),
  clear: () => undefined,
};

/**
 * `window/showMessageRequest` (the trust question a run waits on) as a modal dialog instead of a
 * toast that hides itself after seconds (questions.ts); answers with the server's own action item.
 */
export async function askQuestion(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
  const actions = params.actions ?? [];
  const severity =
    params.type === MessageType.Error ? "error" : params.type === MessageType.Warning ? "warning" : "info";
  const title = await api.askModal(
    severity,
    dialogOf({ message: params.message, actions: actions.map((a) => a.title) }),
  );
  return actions.find((a) => a.title === title) ?? null;
}

export interface OptionDeps {
  log: vscode.LogOutputChannel;
  hooks: () => ClientHooks;
  /** The settings in the server's shape, read fresh each time. */
  settings: () => ServerSettings;
  errorHandler: ErrorHandler;
}

function lines(input: Readable, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", each);
}

export function buildClientOptions(deps: OptionDeps): LanguageClientOptions {
  return {
    stdioOptions: {
      stdout: (input, channel) => lines(input, (line) => channel.info(line)),
      stderr: (input, channel) => {
        const classifier = new StderrClassifier();
        lines(input, (line) => {
          const { level, text } = classifier.classify(line);
          channel[level](text);
        });
      },
    },
    // The review's `.diff` too: the server offers per-hunk keep/drop and reads `#` comments there.
    documentSelector: [...CARD_SELECTOR, { scheme: "file", pattern: "**/.cardrunner/runs/*.diff" }],
    outputChannel: deps.log,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationFailedHandler: () => false,
    errorHandler: deps.errorHandler,
    initializationOptions: initializationOptions(deps.settings()),
    middleware: {
      executeCommand: (command, args, next) =>
        deps.hooks().executeCommand?.(command, args) ? undefined : next(command, args),
      workspace: {
        // The `cardrunner` section is answered in the server's shape, not VS Code's camelCase one.
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, i) => (item.section === "cardrunner" ? deps.settings() : answers[i]));
        },
      },
    },
  };
}
