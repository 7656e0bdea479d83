/**
 * The real `Probe` for server command resolution: PATH lookup, file checks, a Python import check.
 *
 * Why separate from serverLaunch.ts: resolution stays pure (fake probes in tests), while this
 * module does the Node I/O — still without `vscode`, so it too is tested under plain Node against
 * real files and a real interpreter. The Python extension lookup is passed in by the caller.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, readFile, stat } from "node:fs/promises";
import * as path from "node:path";
import { settingArgv, type Probe } from "./serverLaunch";

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile()) {
      return false;
    }
    await access(file, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Like `which`: the first executable named `name` on `envPath`, or undefined. */
export async function findOnPath(
  name: string,
  envPath: string | undefined = process.env.PATH,
  platform: string = process.platform,
): Promise<string | undefined> {
  const dirs = (envPath ?? "").split(platform === "win32" ? ";" : ":").filter((d) => d !== "");
  const exts = platform === "win32" ? ["", ".exe", ".cmd", ".bat"] : [""];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (await isExecutableFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

export async function pathExists(file: string): Promise<boolean> {
  try {
    await access(file, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether `python` can import cardrunner (bounded: a hung interpreter counts as "no"). */
export function pythonHasModule(python: string, module = "cardrunner", timeoutMs = 10_000): Promise<boolean> {
  const code = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 1)`;
  return new Promise((resolve) => {
    execFile(python, ["-P", "-c", code], { timeout: timeoutMs, windowsHide: true }, (error) => {
      resolve(error === null);
    });
  });
}

/** A small file's text; undefined when missing, unreadable or over 2 MB. */
export async function readSmallText(file: string): Promise<string | undefined> {
  try {
    const info = await stat(file);
    return info.size > 2_000_000 ? undefined : await readFile(file, "utf-8");
  } catch {
    return undefined;
  }
}

/** JSON with comments and trailing commas (VS Code's settings.json) to plain JSON text. */
export function stripJsonc(text: string): string {
  // Strings are matched first so a `//` inside one ("https://…") stays as it is.
  return text
    .replace(/("(?:[^"\\]|\\.)*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_m, str: string | undefined) => str ?? "")
    .replace(
      /("(?:[^"\\]|\\.)*")|,(\s*[}\]])/g,
      (_m, str: string | undefined, close: string | undefined) => str ?? close ?? "",
    );
}

/**
 * `cardrunner.server.command` in the folder's own `.vscode/settings.json` (where `cardrunner demo`
 * writes it): read as text, since VS Code rightly drops a machine setting from a workspace. It is
 * only ever offered to the user, never run on its own.
 */
export async function workspaceCommand(folder: string | undefined): Promise<string[]> {
  const text = folder ? await readSmallText(path.join(folder, ".vscode", "settings.json")) : undefined;
  if (!text) {
    return [];
  }
  try {
    const parsed: unknown = JSON.parse(stripJsonc(text));
    return parsed && typeof parsed === "object"
      ? settingArgv((parsed as Record<string, unknown>)["cardrunner.server.command"])
      : [];
  } catch {
    return [];
  }
}

/** A Probe over the real machine. */
export function nodeProbe(
  setting: readonly string[],
  workspaceFolder: string | undefined,
  pythonInterpreter: () => Promise<string | undefined>,
  workspaceEnvironments = false,
): Probe {
  return {
    readText: readSmallText,
    setting,
    workspaceFolder,
    platform: process.platform,
    searchPath: process.env.PATH,
    which: (name) => findOnPath(name),
    exists: pathExists,
    pythonInterpreter,
    hasCardrunner: (python) => pythonHasModule(python),
    workspaceEnvironments,
  };
}
