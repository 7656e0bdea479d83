/**
 * The user's word on a server program they did not choose themselves (serverLaunch.ts offers it).
 *
 * Why a modal and the user's settings: the program is found in, or named by, the workspace — a
 * stranger's files — and runs with the user's rights every time the folder opens. So it is asked
 * once, in a dialog that names the exact argv, and the yes is kept per folder in
 * `cardrunner.server.allowedCommands`, a machine-scoped setting: a workspace's
 * `.vscode/settings.json` cannot pre-answer it, and the user can read and undo it. A no is kept in
 * the extension's own state, so the question is not asked again on every start; the failure
 * message's "Use it" button overrides it.
 */
import type * as vscode from "vscode";
import { formatArgv, launchArgv, type ServerLaunch } from "./serverLaunch";
import * as api from "./vscodeapi";

export const ALLOWED_KEY = "server.allowedCommands";
const DECLINED_KEY = "cardrunner.declinedServerCommands";

const same = (a: readonly string[], b: readonly string[]): boolean => JSON.stringify(a) === JSON.stringify(b);

export class ServerConsent {
  constructor(private readonly state: vscode.Memento) {}

  /** The recorded answer for `argv` in `folder`: the user's settings first, then a kept no. */
  answer(folder: string | undefined, argv: readonly string[]): "yes" | "no" | undefined {
    const allowed = api.userSetting(ALLOWED_KEY);
    const mine =
      folder && allowed && typeof allowed === "object" ? (allowed as Record<string, unknown>)[folder] : undefined;
    if (Array.isArray(mine) && same(mine, argv)) {
      return "yes";
    }
    const declined = this.state.get<Record<string, string[][]>>(DECLINED_KEY, {});
    return folder && (declined[folder] ?? []).some((no) => same(no, argv)) ? "no" : undefined;
  }

  /** Keep the yes in the user's settings (one program per folder). */
  async allow(folder: string, argv: readonly string[]): Promise<void> {
    const allowed = api.userSetting(ALLOWED_KEY);
    const current = allowed && typeof allowed === "object" ? (allowed as Record<string, unknown>) : {};
    await api.writeUserSetting(ALLOWED_KEY, { ...current, [folder]: [...argv] });
    const declined = this.state.get<Record<string, string[][]>>(DECLINED_KEY, {});
    await this.state.update(DECLINED_KEY, {
      ...declined,
      [folder]: (declined[folder] ?? []).filter((no) => !same(no, argv)),
    });
  }

  async decline(folder: string, argv: readonly string[]): Promise<void> {
    const declined = this.state.get<Record<string, string[][]>>(DECLINED_KEY, {});
    await this.state.update(DECLINED_KEY, { ...declined, [folder]: [...(declined[folder] ?? []), [...argv]] });
  }

  /** The one question: start the server with this exact program? Escape is a no. */
  async ask(folder: string, offer: ServerLaunch): Promise<boolean> {
    const picked = await api.askModal("warning", {
      message: `Start cardrunner's language server with ${formatArgv(launchArgv(offer))}?`,
      detail:
        `Found: ${offer.source}, for ${folder}. ` +
        "It runs with your rights whenever this folder is open. " +
        "A yes is kept in your user settings (cardrunner.server.allowedCommands); " +
        "the folder's own settings cannot give it.",
      buttons: [
        { title: "Don't start", isCloseAffordance: true },
        { title: "Start it", isCloseAffordance: false },
      ],
    });
    return picked === "Start it";
  }
}
