/**
 * Starts, stops and restarts the language client for `cardrunner lsp`.
 *
 * Why it owns so much: the server process is the one thing whose life cycle matters — its command
 * is resolved per workspace (serverLaunch.ts), its environment carries the API key (secrets.ts),
 * a change of `cardrunner.server.*` needs a new process (debounced, so typing in the settings UI
 * restarts once), while every other setting is pushed to the running server with
 * `workspace/didChangeConfiguration` in the server's own settings shape (settings.ts).
 */
import type * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LogMessageNotification,
  ShowMessageRequest,
  State,
  type ErrorHandler,
  type ServerOptions,
} from "vscode-languageclient/node";
import { askQuestion, buildClientOptions, ONE_RUN_STATUS, type ClientHooks } from "./clientOptions";
import { CrashPolicy } from "./crashPolicy";
import { ServerConsent } from "./consent";
import { nodeProbe, workspaceCommand } from "./probe";
import { ClientCommand } from "./protocol";
import type { ApiKeyStore } from "./secrets";
import {
  formatArgv,
  launchArgv,
  settingArgv,
  resolveServerLaunch,
  startFailureMessage,
  type Resolution,
} from "./serverLaunch";
import { RESTART_SECTION, toServerSettings, type ServerSettings } from "./settings";
import * as api from "./vscodeapi";

/** `restricted`: the folder is untrusted, so no server is started until it is trusted. */
export type ServerState = "starting" | "running" | "stopped" | "failed" | "restricted";

const RESTART_DEBOUNCE_MS = 750;

type Handler = (params: unknown) => void;

export class ServerClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private busy: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly handlers: Array<[string, Handler]> = [];
  private readonly stateListeners: Array<(state: ServerState, detail: string) => void> = [];
  private readonly disposables: vscode.Disposable[] = [];
  private lastProblems = "";
  private readonly crashes = new CrashPolicy();
  /** A start was refused for Restricted Mode: trusting the folder starts the server. */
  private waitingForTrust = false;
  /** Set by the composition root before start. */
  hooks: ClientHooks = {};
  /** The argv the server was last started with (the demo command reuses its interpreter). */
  serverArgv: string[] | undefined;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly keys: ApiKeyStore,
    private readonly consent: ServerConsent,
  ) {
    this.disposables.push(
      api.onDidChangeConfiguration((e) => {
        // A recorded yes (server.allowedCommands) is written during a start: not a reason to restart.
        if (RESTART_SECTION.some((key) => e.affectsConfiguration(key))) {
          this.restartSoon("cardrunner.server.* changed");
        } else if (e.affectsConfiguration("cardrunner")) {
          void this.pushConfiguration();
        }
      }),
      api.registerCommand(ClientCommand.restartServer, () => this.restart("restart requested")),
      api.onDidGrantWorkspaceTrust(() => {
        if (this.waitingForTrust) {
          this.log.info("the folder is trusted now: starting the server");
          void this.start();
        }
      }),
    );
  }

  /** Handle a server notification; kept across restarts. */
  onNotification(method: string, handler: Handler): void {
    this.handlers.push([method, handler]);
    this.client?.onNotification(method, handler);
  }

  onStateChange(listener: (state: ServerState, detail: string) => void): void {
    this.stateListeners.push(listener);
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Start (serialised with stop/restart, so concurrent triggers never start two servers). */
  start(): Promise<void> {
    return this.serialise(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.serialise(() => this.doStop());
  }

  restart(reason: string): Promise<void> {
    this.log.info(`restarting the server: ${reason}`);
    this.crashes.reset();
    return this.serialise(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /** Restart after changes settle (settings UI edits arrive keystroke by keystroke). */
  restartSoon(reason: string): void {
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.restart(reason), RESTART_DEBOUNCE_MS);
  }

  /** Run a server command (workspace/executeCommand); errors are shown, not thrown. */
  async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      const pick = await api.showWarning("cardrunner: the language server is not running.", "Restart", "Show output");
      if (pick === "Restart") {
        void this.restart("requested after a command found it stopped");
      } else if (pick === "Show output") {
        this.log.show();
      }
      return undefined;
    }
    try {
      this.log.info(`executeCommand ${command}`);
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`${command} failed: ${message}`);
      void api.showError(`cardrunner: ${command} failed: ${message}`);
      return undefined;
    }
  }

  /** A custom request (e.g. `cardrunner/board`); undefined while the server is not running. */
  async request(method: string, params: unknown): Promise<unknown> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      return undefined;
    }
    return client.sendRequest(method, params);
  }

  private serialise(step: () => Promise<void>): Promise<void> {
    this.busy = this.busy.then(step, step);
    return this.busy;
  }

  private emit(state: ServerState, detail: string): void {
    this.stateListeners.forEach((listener) => listener(state, detail));
  }

  private settings(): ServerSettings {
    const { settings, problems } = toServerSettings(api.readSetting);
    const text = problems.join("; ");
    if (text !== this.lastProblems && text !== "") {
      this.log.warn(`ignored settings: ${text}`);
      void api.showWarning(`cardrunner: ignored invalid settings: ${text}`);
    }
    this.lastProblems = text;
    return settings;
  }

  private async resolve(): Promise<Resolution> {
    const argv = settingArgv(api.readSetting("server.command"));
    const workspaceEnvironments = api.readSetting("server.workspaceEnvironments") === true;
    const folder = api.workspaceFolderPath();
    const probe = nodeProbe(argv, folder, api.pythonInterpreter, workspaceEnvironments);
    return resolveServerLaunch({
      ...probe,
      workspaceCommand: await workspaceCommand(folder),
      answer: (candidate) => this.consent.answer(folder, candidate),
    });
  }

  /** Resolve; ask about each program found but not chosen (a no goes on to the next), once. */
  private async resolveAsking(): Promise<Resolution> {
    let resolution = await this.resolve();
    const folder = api.workspaceFolderPath();
    while (!resolution.found && resolution.offers[0] && folder) {
      const offer = resolution.offers[0];
      this.log.info(`asking whether to start ${formatArgv(launchArgv(offer))} (${offer.source})`);
      const yes = await this.consent.ask(folder, offer);
      try {
        await (yes ? this.consent.allow(folder, launchArgv(offer)) : this.consent.decline(folder, launchArgv(offer)));
      } catch (err) {
        // An unwritable settings file: the answer holds for this start, and the user is told.
        this.log.error(`could not keep the answer: ${String(err)}`);
        void api.showError(`cardrunner: could not save your answer in your user settings: ${String(err)}`);
        return yes ? { ...resolution, found: offer } : { ...resolution, offers: [], declined: [offer] };
      }
      resolution = await this.resolve();
    }
    return resolution;
  }

  /**
   * Every start passes here — the first, a restart from the palette, one after the API key or a
   * `cardrunner.server.*` setting changed — so none of them runs the folder's programs while
   * the folder is untrusted (Restricted Mode); the state says so, and trust starts it.
   */
  private async doStart(): Promise<void> {
    this.waitingForTrust = !api.isWorkspaceTrusted();
    if (this.waitingForTrust) {
      this.log.info("Restricted Mode: no server started until the folder is trusted");
      this.emit("restricted", "the folder is not trusted (Restricted Mode)");
      return;
    }
    this.emit("starting", "resolving the server command");
    const resolution = await this.resolveAsking();
    resolution.tried.forEach((line) => this.log.info(`server command candidate: ${line}`));
    const found = resolution.found;
    if (!found) {
      this.fail(resolution);
      return;
    }
    this.serverArgv = [found.command, ...found.args];
    const argv = formatArgv(this.serverArgv);
    this.log.info(`starting the server: ${argv} (${found.source})`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: found.args,
      options: { cwd: api.workspaceFolderPath(), env: await this.keys.serverEnv() },
    };
    let everRan = false;
    const clientOptions = buildClientOptions({
      log: this.log,
      hooks: () => this.hooks,
      settings: () => this.settings(),
      errorHandler: this.errorHandler(() => everRan),
    });
    const client = new LanguageClient("cardrunner", "cardrunner", serverOptions, clientOptions);
    client.registerFeature(ONE_RUN_STATUS);
    client.onRequest(ShowMessageRequest.type, askQuestion);
    // Every record the server logs goes to its stderr and again as `window/logMessage`; the client
    // wrote both to the one channel, so each line showed twice. stderr is the one kept: it has all
    // of them (also those from before the client was connected, tracebacks, the workers' lines).
    client.onNotification(LogMessageNotification.type, () => undefined);
    this.handlers.forEach(([method, handler]) => client.onNotification(method, handler));
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        everRan = true;
        this.emit("running", argv);
      } else if (e.newState === State.Stopped && this.client === client) {
        this.emit("stopped", "the server stopped");
      }
    });
    this.client = client;
    try {
      await client.start();
      this.log.info("server started");
    } catch (err) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.fail(resolution, err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * A server that never came up is not restarted (doStart reports why); one that crashed later is
   * restarted as CrashPolicy allows, then left stopped with a message.
   */
  private errorHandler(everRan: () => boolean): ErrorHandler {
    return {
      error: (_error, _message, count) => ({
        action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
        handled: true,
      }),
      closed: () => {
        if (!everRan()) {
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const { restart, count } = this.crashes.crashed(Date.now());
        if (restart) {
          this.log.warn(`the server exited; restarting it (${count} of ${this.crashes.max})`);
          return { action: CloseAction.Restart, handled: true };
        }
        const message = `cardrunner: the language server exited ${count} times in 3 minutes and is not restarted.`;
        this.log.error(message);
        this.emit("failed", message);
        void api.showError(message, "Restart", "Show output").then((pick) => {
          if (pick === "Restart") {
            void this.restart("restart requested after crashes");
          } else if (pick === "Show output") {
            this.log.show();
          }
        });
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  /** Two lines and the buttons that do the fix: use the found program, pick one, open the output. */
  private fail(resolution: Resolution, error?: string): void {
    const message = startFailureMessage(resolution, error);
    this.log.error(`${message}\n  tried: ${resolution.tried.join("\n  tried: ")}`);
    this.emit("failed", message);
    const offer = resolution.offers[0] ?? resolution.declined?.[0];
    const folder = api.workspaceFolderPath();
    const buttons = [...(offer && folder ? ["Use it"] : []), "Pick program…", "Open Settings", "Show output"];
    void api.showError(message, ...buttons).then(async (pick) => {
      if (pick === "Use it" && offer && folder) {
        await this.consent.allow(folder, launchArgv(offer));
        this.restartSoon("the user allowed the found program");
      } else if (pick === "Pick program…") {
        await this.pickProgram();
      } else if (pick === "Open Settings") {
        void api.openSettingsWhereTheyLive("cardrunner.server");
      } else if (pick === "Show output") {
        this.log.show();
      }
    });
  }

  /** The user points at a cardrunner (or a Python with it): kept as their `cardrunner.server.command`. */
  private async pickProgram(): Promise<void> {
    const program = await api.pickProgram("The cardrunner program (…/bin/cardrunner) or a Python that has it");
    if (program) {
      const argv = /python[\d.]*(\.exe)?$/i.test(program)
        ? [program, "-P", "-m", "cardrunner", "lsp"]
        : [program, "lsp"];
      await api.writeUserSetting("server.command", argv);
      this.restartSoon("the user picked the server program");
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(3000);
      } catch (err) {
        this.log.warn(`stopping the server: ${String(err)}`);
      }
      this.emit("stopped", "stopped");
    }
  }

  /** Push the settings to the running server, in the server's own shape. */
  private async pushConfiguration(): Promise<void> {
    if (!this.running || !this.client) {
      return;
    }
    const settings = this.settings();
    this.log.info(`pushing settings to the server: ${JSON.stringify(settings)}`);
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { cardrunner: settings } });
  }

  dispose(): void {
    clearTimeout(this.restartTimer);
    this.disposables.forEach((d) => d.dispose());
    void this.stop();
  }
}
