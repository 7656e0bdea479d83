/**
 * The real `Probe` for server command resolution: PATH lookup, file checks, a Python import check.
 *
 * Why separate from serverLaunch.ts: resolution stays pure (fake probes in tests), while this
 * module does the Node I/O — still without `vscode`, so it too is tested under plain Node against
 * real files and a real interpreter. The Python extension lookup is passed in by the caller.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import * as path from "node:path";
import type { Probe } from "./serverLaunch";

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
    execFile(python, ["-c", code], { timeout: timeoutMs, windowsHide: true }, (error) => {
      resolve(error === null);
    });
  });
}

/** A Probe over the real machine. */
export function nodeProbe(
  setting: readonly string[],
  workspaceFolder: string | undefined,
  pythonInterpreter: () => Promise<string | undefined>,
): Probe {
  return {
    setting,
    workspaceFolder,
    platform: process.platform,
    searchPath: process.env.PATH,
    which: (name) => findOnPath(name),
    exists: pathExists,
    pythonInterpreter,
    hasCardrunner: (python) => pythonHasModule(python),
  };
}
