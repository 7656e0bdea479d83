/**
 * The one wrapper over the VS Code API that the other modules call.
 *
 * Why: calls into `vscode` are where behaviour differs between VS Code, code-server and forks, and
 * where a test double would go; keeping them in one small module makes that surface visible and
 * keeps the feature modules about cardrunner, not about editor plumbing.
 */
import * as vscode from "vscode";
import type { Dialog } from "./questions";

export type Disposable = vscode.Disposable;

/** The LogOutputChannel everything logs to (the language client writes its trace there too). */
export function createLog(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function registerCommand(id: string, run: (...args: unknown[]) => unknown): vscode.Disposable {
  return vscode.commands.registerCommand(id, run);
}

export function executeCommand<T = unknown>(id: string, ...args: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(id, ...args);
}

/** Read `cardrunner.<key>` for the first workspace folder (or the window). */
export function readSetting(key: string): unknown {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return vscode.workspace.getConfiguration("cardrunner", folder?.uri).get<unknown>(key);
}

export function onDidChangeConfiguration(listener: (e: vscode.ConfigurationChangeEvent) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration(listener);
}

/** The first workspace folder's file-system path, if one is open. */
export function workspaceFolderPath(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file");
  return folder?.uri.fsPath;
}

/** The Python extension's selected interpreter for the workspace, if the extension is there. */
export async function pythonInterpreter(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const fromEnvs = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
    if (fromEnvs) {
      return fromEnvs;
    }
    return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
  } catch {
    return undefined;
  }
}

/** The part of ms-python.python's exported API we use (it ships no types we can depend on). */
interface PythonExtensionApi {
  environments?: { getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined };
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

export function showError(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(message, ...actions);
}

export function showWarning(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message, ...actions);
}

export function showInfo(message: string, ...actions: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message, ...actions);
}

/**
 * A modal dialog (questions.ts): `severity` picks its icon; resolves with the title of the button
 * clicked, or of the close-affordance button on Escape.
 */
export async function askModal(severity: "error" | "warning" | "info", dialog: Dialog): Promise<string | undefined> {
  const show = {
    error: vscode.window.showErrorMessage,
    warning: vscode.window.showWarningMessage,
    info: vscode.window.showInformationMessage,
  }[severity];
  const picked = await show(dialog.message, { modal: true, detail: dialog.detail }, ...dialog.buttons);
  return picked?.title;
}

export function showInputBox(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox(options);
}

export function showQuickPick<T extends vscode.QuickPickItem>(
  items: T[],
  options: vscode.QuickPickOptions,
): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, options);
}

/** Open a file in an editor (e.g. a run's JSONL log). */
export async function openFile(path: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** Whether the workspace has a file matching `glob` (relative to each folder). */
export async function workspaceHas(glob: string): Promise<boolean> {
  const found = await vscode.workspace.findFiles(glob, "**/node_modules/**", 1);
  return found.length > 0;
}

/** Call `listener` once, when a document matching `selector` is first open. */
export function onceDocumentOpen(selector: vscode.DocumentSelector, listener: () => void): vscode.Disposable {
  const matches = (doc: vscode.TextDocument): boolean => vscode.languages.match(selector, doc) > 0;
  if (vscode.workspace.textDocuments.some(matches)) {
    listener();
    return { dispose: () => undefined };
  }
  const sub = vscode.workspace.onDidOpenTextDocument((doc) => {
    if (matches(doc)) {
      sub.dispose();
      listener();
    }
  });
  return sub;
}

/** The URI (string) of the active editor's document, if it is a Markdown file. */
export function activeMarkdownUri(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc && doc.languageId === "markdown" ? doc.uri.toString() : undefined;
}

export function fileUri(path: string): vscode.Uri {
  return vscode.Uri.file(path);
}

export function parseUri(uri: string): vscode.Uri {
  return vscode.Uri.parse(uri);
}

/** Whether a file exists (through the editor's file system, so remote workspaces work too). */
export async function fileExists(path: string): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(path));
    return true;
  } catch {
    return false;
  }
}

/** Open VS Code's native diff editor. */
export function openDiff(left: vscode.Uri, right: vscode.Uri, title: string, background: boolean): Thenable<unknown> {
  return vscode.commands.executeCommand("vscode.diff", left, right, title, {
    preview: false,
    preserveFocus: background,
  });
}

/** VS Code's multi-file diff editor (`vscode.changes`): one tab with every changed file. */
export function openChanges(title: string, changes: Array<[vscode.Uri, vscode.Uri, vscode.Uri]>): Thenable<unknown> {
  return vscode.commands.executeCommand("vscode.changes", title, changes);
}

/** A URI of one of our schemes at a file's path (`query`: what the content provider reads). */
export function schemeUri(scheme: string, path: string, query: string): vscode.Uri {
  return vscode.Uri.from({ scheme, path: vscode.Uri.file(path).path, query });
}

/** A file's text, through the editor's file system ("" when it cannot be read). */
export async function readText(path: string): Promise<string> {
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
  } catch {
    return "";
  }
}

/**
 * The multi-file diff tab's input (`TabInputTextMultiDiff`, VS Code ≥ 1.96): not in the API
 * version this extension is built against, so it is recognised by its shape, its `textDiffs`.
 */
function multiDiffSides(input: unknown): string[] | undefined {
  const diffs = (input as { textDiffs?: unknown } | undefined)?.textDiffs;
  return Array.isArray(diffs)
    ? diffs.flatMap((d: unknown) =>
        d instanceof vscode.TabInputTextDiff ? [d.original.toString(), d.modified.toString()] : [],
      )
    : undefined;
}

/**
 * The tabs of a review: diff editors whose sides are any of `uris` (by their input URIs, the one
 * sure key), evidence documents among them, and the multi-file diff editor — by its diffs' URIs,
 * or where its input is not visible to the API, by its title as VS Code labels it
 * ("Review: X" plus " (2 files)").
 */
function reviewTabs(uris: ReadonlySet<string>, multiTitle?: string): vscode.Tab[] {
  const titled = (label: string): boolean =>
    multiTitle !== undefined && (label === multiTitle || (label.startsWith(`${multiTitle} (`) && label.endsWith(")")));
  return vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => {
      const input = tab.input;
      if (input instanceof vscode.TabInputTextDiff) {
        return uris.has(input.original.toString()) || uris.has(input.modified.toString());
      }
      if (input instanceof vscode.TabInputText) {
        return uris.has(input.uri.toString());
      }
      const sides = multiDiffSides(input);
      return sides ? sides.some((uri) => uris.has(uri)) : input === undefined && titled(tab.label);
    });
}

/** Close every copy of a review's editors; unsaved ones are left open. */
export async function closeDiffEditors(uris: ReadonlySet<string>, multiTitle?: string): Promise<void> {
  const tabs = reviewTabs(uris, multiTitle).filter((tab) => !tab.isDirty);
  if (tabs.length > 0) {
    await vscode.window.tabGroups.close(tabs, true);
  }
}

const GROUP_ORDINALS = ["First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth"];

/**
 * Bring a review's open editor forward (the multi-file diff first): focus its group, then the
 * tab at its index there. The API has no "reveal this tab", so it goes through the workbench's
 * own commands. False when no review editor is open.
 */
export async function focusReviewTab(uris: ReadonlySet<string>, multiTitle?: string): Promise<boolean> {
  const tabs = reviewTabs(uris, multiTitle);
  const tab = tabs.find((t) => !(t.input instanceof vscode.TabInputText)) ?? tabs[0];
  const ordinal = tab ? GROUP_ORDINALS[tab.group.viewColumn - 1] : undefined;
  if (!tab || !ordinal) {
    return false;
  }
  await vscode.commands.executeCommand(`workbench.action.focus${ordinal}EditorGroup`);
  await vscode.commands.executeCommand("workbench.action.openEditorAtIndex", tab.group.tabs.indexOf(tab));
  return true;
}

/** Serve read-only documents of a URI scheme (the sides of a review diff, its evidence). */
export function registerContentProvider(
  scheme: string,
  provider: ((uri: vscode.Uri) => string | Thenable<string>) | vscode.TextDocumentContentProvider,
): vscode.Disposable {
  const full = typeof provider === "function" ? { provideTextDocumentContent: provider } : provider;
  return vscode.workspace.registerTextDocumentContentProvider(scheme, full);
}

/** Open a document in the column beside the active one, keeping the focus where it is. */
export function createStatusBarItem(id: string, name: string): vscode.StatusBarItem {
  const item = vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Left, 50);
  item.name = name;
  return item;
}

export function createLanguageStatus(id: string, selector: vscode.DocumentSelector): vscode.LanguageStatusItem {
  return vscode.languages.createLanguageStatusItem(id, selector);
}

export const Severity = {
  error: vscode.LanguageStatusSeverity.Error,
  warning: vscode.LanguageStatusSeverity.Warning,
  information: vscode.LanguageStatusSeverity.Information,
} as const;

export function themeIcon(id: string): vscode.ThemeIcon {
  return new vscode.ThemeIcon(id);
}

export function markdown(text: string): vscode.MarkdownString {
  const md = new vscode.MarkdownString(text, true);
  md.isTrusted = false;
  return md;
}

/** Open the Settings UI at `cardrunner.server.command`. */
export function openSettings(query: string): Thenable<unknown> {
  return vscode.commands.executeCommand("workbench.action.openSettings", query);
}

export function createEmitter<T>(): vscode.EventEmitter<T> {
  return new vscode.EventEmitter<T>();
}

export function createTreeView<T>(id: string, provider: vscode.TreeDataProvider<T>): vscode.TreeView<T> {
  return vscode.window.createTreeView(id, { treeDataProvider: provider, showCollapseAll: false });
}

export function treeItem(label: string, state: "expanded" | "collapsed" | "none"): vscode.TreeItem {
  const collapsible = {
    expanded: vscode.TreeItemCollapsibleState.Expanded,
    collapsed: vscode.TreeItemCollapsibleState.Collapsed,
    none: vscode.TreeItemCollapsibleState.None,
  }[state];
  return new vscode.TreeItem(label, collapsible);
}

/** Call `listener` when files matching `glob` are created, changed or deleted. */
export function watchFiles(glob: string, listener: () => void): vscode.Disposable {
  const watcher = vscode.workspace.createFileSystemWatcher(glob);
  watcher.onDidCreate(listener);
  watcher.onDidChange(listener);
  watcher.onDidDelete(listener);
  return watcher;
}

/** Set a context key for when-clauses (`cardrunner.running`, `cardrunner.reviewWaiting`). */
export function setContext(key: string, value: unknown): Thenable<unknown> {
  return vscode.commands.executeCommand("setContext", key, value);
}

/** The first workspace folder's URI, if one is open. */
export function workspaceFolderUri(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

/** Create a file (failing if it exists) and open it in an editor. */
export async function createAndOpen(uri: vscode.Uri, text: string): Promise<void> {
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(doc);
}

export function joinPath(base: vscode.Uri, ...parts: string[]): vscode.Uri {
  return vscode.Uri.joinPath(base, ...parts);
}

export function createWebviewPanel(id: string, title: string, root: vscode.Uri): vscode.WebviewPanel {
  return vscode.window.createWebviewPanel(id, title, vscode.ViewColumn.Active, {
    enableScripts: true,
    localResourceRoots: [root],
    retainContextWhenHidden: false,
  });
}

export function createTerminal(name: string): vscode.Terminal {
  return vscode.window.createTerminal({ name, cwd: workspaceFolderUri() });
}

/** `cardrunner.<key>` as the user's own settings have it (never a workspace's). */
export function userSetting(key: string): unknown {
  return vscode.workspace.getConfiguration("cardrunner").inspect<unknown>(key)?.globalValue;
}

/** Write `cardrunner.<key>` to the user's settings (VS Code puts a machine setting in a remote's). */
export function writeUserSetting(key: string, value: unknown): Thenable<void> {
  return vscode.workspace.getConfiguration("cardrunner").update(key, value, vscode.ConfigurationTarget.Global);
}

/**
 * Open the settings UI at `query` on the tab where cardrunner's machine settings live: in a
 * remote window (code-server, SSH, containers) that is the Remote tab, not User.
 */
export function openSettingsWhereTheyLive(query: string): Thenable<unknown> {
  const command = vscode.env.remoteName ? "workbench.action.openRemoteSettings" : "workbench.action.openSettings";
  return vscode.commands.executeCommand(command, { query });
}

/** Ask for one executable file; its path, or undefined. */
export async function pickProgram(title: string): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({ title, canSelectMany: false, openLabel: "Use this program" });
  return picked?.[0]?.fsPath;
}

export function isWorkspaceTrusted(): boolean {
  return vscode.workspace.isTrusted;
}

export function onDidGrantWorkspaceTrust(listener: () => void): vscode.Disposable {
  return vscode.workspace.onDidGrantWorkspaceTrust(listener);
}

/** Folding ranges for a language from a function of the document's text. */
/** A tree row's checkbox (VS Code ≥ 1.80). */
export function checkbox(checked: boolean): vscode.TreeItemCheckboxState {
  return checked ? vscode.TreeItemCheckboxState.Checked : vscode.TreeItemCheckboxState.Unchecked;
}

export function isChecked(state: vscode.TreeItemCheckboxState): boolean {
  return state === vscode.TreeItemCheckboxState.Checked;
}
