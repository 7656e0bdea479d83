/**
 * The one wrapper over the VS Code API that the other modules call.
 *
 * Why: calls into `vscode` are where behaviour differs between VS Code, code-server and forks, and
 * where a test double would go; keeping them in one small module makes that surface visible and
 * keeps the feature modules about cardrunner, not about editor plumbing.
 */
import * as vscode from "vscode";

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

export function showInputBox(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox(options);
}

export function createQuickPick<T extends vscode.QuickPickItem>(): vscode.QuickPick<T> {
  return vscode.window.createQuickPick<T>();
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

/** Close the diff editors showing any of `uris` (on either side); unsaved ones are left open. */
export async function closeDiffEditors(uris: ReadonlySet<string>, multiTitle?: string): Promise<void> {
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter(
      (tab) =>
        (tab.input instanceof vscode.TabInputTextDiff &&
          !tab.isDirty &&
          (uris.has(tab.input.original.toString()) || uris.has(tab.input.modified.toString()))) ||
        (tab.input instanceof vscode.TabInputText && uris.has(tab.input.uri.toString())) ||
        (multiTitle !== undefined && tab.label === multiTitle),
    );
  if (tabs.length > 0) {
    await vscode.window.tabGroups.close(tabs, true);
  }
}

/** Serve read-only documents of a URI scheme (the empty side of a diff, the live run view). */
export function registerContentProvider(
  scheme: string,
  provider: ((uri: vscode.Uri) => string) | vscode.TextDocumentContentProvider,
): vscode.Disposable {
  const full = typeof provider === "function" ? { provideTextDocumentContent: provider } : provider;
  return vscode.workspace.registerTextDocumentContentProvider(scheme, full);
}

/** Open a document by URI (any scheme) in an editor, without taking a preview slot. */
export async function openDocument(uri: vscode.Uri): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(doc, { preview: false });
}

/** Open a document in the column beside the active one, keeping the focus where it is. */
export async function openBeside(uri: vscode.Uri): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(doc, {
    viewColumn: vscode.ViewColumn.Beside,
    preserveFocus: true,
    preview: true,
  });
}

/** The URIs of the open documents of a scheme. */
export function openDocumentUris(scheme: string): vscode.Uri[] {
  return vscode.workspace.textDocuments.filter((d) => d.uri.scheme === scheme).map((d) => d.uri);
}

/** The URI of the active editor's document, whatever its scheme. */
export function activeDocumentUri(): vscode.Uri | undefined {
  return vscode.window.activeTextEditor?.document.uri;
}

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
