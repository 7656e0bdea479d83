/**
 * The Anthropic API key, kept in VS Code's SecretStorage (the OS keychain), never in settings.
 *
 * Why: settings files get committed and synced; SecretStorage does not. The key reaches the server
 * only as `ANTHROPIC_API_KEY` in its process environment, and is never written to any log. When
 * no key is stored, the server inherits the editor's environment (so `ANTHROPIC_API_KEY` exported
 * in the shell that started VS Code still works). Setting or clearing the key restarts the server,
 * because a process environment cannot change after start.
 */
import type * as vscode from "vscode";
import { ClientCommand } from "./protocol";
import * as api from "./vscodeapi";

const SECRET_KEY = "cardrunner.anthropicApiKey";

export class ApiKeyStore implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: vscode.LogOutputChannel,
    onChange: () => void,
  ) {
    this.disposables.push(
      secrets.onDidChange((e) => {
        if (e.key === SECRET_KEY) {
          onChange();
        }
      }),
      api.registerCommand(ClientCommand.setApiKey, () => this.promptAndStore()),
      api.registerCommand(ClientCommand.clearApiKey, () => this.clear()),
    );
  }

  /** The stored key, or undefined (then the environment's ANTHROPIC_API_KEY applies). */
  async get(): Promise<string | undefined> {
    try {
      return (await this.secrets.get(SECRET_KEY)) || undefined;
    } catch (err) {
      this.log.warn(`could not read the API key from secret storage: ${String(err)}`);
      return undefined;
    }
  }

  /** The environment for the server process: the editor's, plus the stored key if there is one. */
  async serverEnv(base: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
    const key = await this.get();
    return key ? { ...base, ANTHROPIC_API_KEY: key } : { ...base };
  }

  async promptAndStore(): Promise<void> {
    const key = await api.showInputBox({
      title: "cardrunner: Anthropic API key",
      prompt: "Stored in the OS keychain (VS Code SecretStorage) and passed to the server as ANTHROPIC_API_KEY.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() === "" ? "Enter a key, or press Escape to cancel." : undefined),
    });
    if (key === undefined) {
      return;
    }
    await this.secrets.store(SECRET_KEY, key.trim());
    this.log.info("API key stored in secret storage; restarting the server to pass it on.");
    void api.showInfo("cardrunner: API key stored. The language server restarts to use it.");
  }

  async clear(): Promise<void> {
    await this.secrets.delete(SECRET_KEY);
    this.log.info("API key removed from secret storage.");
    void api.showInfo(
      "cardrunner: API key cleared. The server now uses ANTHROPIC_API_KEY from the environment, if set.",
    );
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
