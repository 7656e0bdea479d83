/**
 * Which command starts `cardrunner lsp` for this workspace.
 *
 * Why an ordered search: most users never configure anything, and the server usually lives where
 * the user already put their Python. The order is: the `cardrunner.server.command` setting (an
 * argv list, or one string split into words), then the Python extension's selected interpreter
 * (when cardrunner is installed in it: the user chose that environment on purpose), then the
 * workspace's `.venv` (when cardrunner is installed in it), then `uv run cardrunner lsp` where a
 * `uv.lock` exists (uv makes the locked environment itself), then `cardrunner` on PATH as the
 * extension host has it. Every candidate looked at is recorded, so a failed start can say what
 * was tried and how to fix it. The file system and the Python extension sit behind `Probe`, so
 * this module is pure and unit-tested without VS Code.
 */

/** A resolved command: argv plus where it came from (shown in logs and errors). */
export interface ServerLaunch {
  command: string;
  args: string[];
  source: string;
}

/** What resolution needs from the outside world. */
export interface Probe {
  /** `cardrunner.server.command`; empty means "detect". */
  setting: readonly string[];
  /** The first workspace folder's file-system path, if any. */
  workspaceFolder: string | undefined;
  platform: string;
  /** Absolute path of an executable on PATH, or undefined. */
  which(name: string): Promise<string | undefined>;
  exists(path: string): Promise<boolean>;
  /** The PATH `which` searches (the extension host's own), shown when nothing is found. */
  searchPath?: string;
  /** The Python extension's selected interpreter for the workspace, or undefined. */
  pythonInterpreter(): Promise<string | undefined>;
  /** Whether `python` can import cardrunner. */
  hasCardrunner(python: string): Promise<boolean>;
}

export interface Resolution {
  found: ServerLaunch | undefined;
  /** One line per candidate looked at, in order, saying what was found. */
  tried: string[];
}

/** Quote an argv for display (never executed through a shell). */
export function formatArgv(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
}

function joinPath(platform: string, ...parts: string[]): string {
  const sep = platform === "win32" ? "\\" : "/";
  return parts.join(sep);
}

/** The virtual environment's interpreter inside `folder`. */
export function venvPython(folder: string, platform: string): string {
  return platform === "win32"
    ? joinPath(platform, folder, ".venv", "Scripts", "python.exe")
    : joinPath(platform, folder, ".venv", "bin", "python");
}

function command(argv: readonly string[], source: string): ServerLaunch {
  const [head, ...args] = argv;
  return { command: head ?? "", args, source };
}

async function fromUv(p: Probe, folder: string, tried: string[]): Promise<ServerLaunch | undefined> {
  const locked = await p.exists(joinPath(p.platform, folder, "uv.lock"));
  const uv = locked ? await p.which("uv") : undefined;
  if (uv) {
    return command([uv, "run", "cardrunner", "lsp"], "uv and uv.lock found");
  }
  tried.push(`uv run cardrunner lsp: ${locked ? "uv not on PATH" : "no uv.lock in the workspace"}`);
  return undefined;
}

async function fromVenv(p: Probe, folder: string, tried: string[]): Promise<ServerLaunch | undefined> {
  const python = venvPython(folder, p.platform);
  if (!(await p.exists(python))) {
    tried.push(`${python} -m cardrunner lsp: no such file`);
    return undefined;
  }
  if (await p.hasCardrunner(python)) {
    return command([python, "-m", "cardrunner", "lsp"], "the workspace's .venv");
  }
  tried.push(`${python} -m cardrunner lsp: cardrunner is not installed in the workspace's .venv`);
  return undefined;
}

async function fromPythonExtension(p: Probe, tried: string[]): Promise<ServerLaunch | undefined> {
  const python = await p.pythonInterpreter();
  if (!python) {
    tried.push("the Python extension's interpreter: none selected (or extension not installed)");
    return undefined;
  }
  if (await p.hasCardrunner(python)) {
    return command([python, "-m", "cardrunner", "lsp"], "the Python extension's interpreter");
  }
  tried.push(`${python} -m cardrunner lsp: cardrunner is not installed in that interpreter`);
  return undefined;
}

/** Find the command that starts the server; `found` is undefined when nothing fits. */
export async function resolveServerLaunch(p: Probe): Promise<Resolution> {
  const tried: string[] = [];
  const setting = p.setting.filter((part) => part !== "");
  if (setting.length === 1 && /(^|[\\/])cardrunner(\.exe)?$/i.test(setting[0] ?? "")) {
    // Just the program: it serves the editor as `cardrunner lsp`.
    return { found: command([...setting, "lsp"], "setting cardrunner.server.command, + lsp"), tried };
  }
  if (setting.length > 0) {
    return { found: command(setting, "setting cardrunner.server.command"), tried };
  }
  tried.push("setting cardrunner.server.command: empty");
  const py = await fromPythonExtension(p, tried);
  if (py) {
    return { found: py, tried };
  }
  const folder = p.workspaceFolder;
  if (folder) {
    const found = (await fromVenv(p, folder, tried)) ?? (await fromUv(p, folder, tried));
    if (found) {
      return { found, tried };
    }
  } else {
    tried.push(".venv / uv: no workspace folder open");
  }
  const onPath = await p.which("cardrunner");
  if (onPath) {
    return { found: command([onPath, "lsp"], "cardrunner on PATH"), tried };
  }
  tried.push(`cardrunner lsp: cardrunner not on PATH (${p.searchPath ?? "PATH is empty"})`);
  return { found: undefined, tried };
}

/**
 * The setting as argv: a list as given (non-strings dropped), or one string split into words.
 * A string is split like a command line without a shell: spaces separate words, double or single
 * quotes keep spaces inside a word. Backslashes are plain characters (Windows paths stay as
 * written) and nothing is expanded (no variables, no `~`), so what the user wrote is what runs.
 */
export function settingArgv(value: unknown): string[] {
  if (Array.isArray(value)) {
    return value.filter((part): part is string => typeof part === "string" && part !== "");
  }
  if (typeof value !== "string") {
    return [];
  }
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const ch of value) {
    if (quote) {
      if (ch === quote) {
        quote = undefined;
      } else {
        word = (word ?? "") + ch;
      }
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      word = word ?? "";
    } else if (/\s/.test(ch)) {
      if (word !== undefined) {
        words.push(word);
        word = undefined;
      }
    } else {
      word = (word ?? "") + ch;
    }
  }
  if (word !== undefined) {
    words.push(word);
  }
  return words;
}

/** Put a start error in the user's terms (the language client's wording is about its connection). */
export function describeStartError(error: string): string {
  if (/ENOENT/.test(error)) {
    return `the command was not found (${error})`;
  }
  if (/EACCES/.test(error)) {
    return `the command is not executable (${error})`;
  }
  if (
    /connection got disposed|connection got closed|Connection to server got closed|Server process exited/i.test(error)
  ) {
    return "the server process exited during start-up; its error output is in the cardrunner output";
  }
  return error;
}

/** The error shown when the server could not be started: what was tried and how to fix it. */
export function startFailureMessage(res: Resolution, error?: string): string {
  const lines = ["cardrunner: the language server did not start."];
  if (res.found) {
    lines.push(`Ran: ${formatArgv([res.found.command, ...res.found.args])} (${res.found.source}).`);
  }
  if (error) {
    lines.push(`Error: ${describeStartError(error)}.`);
  }
  if (res.tried.length > 0) {
    lines.push(`Tried: ${res.tried.join("; ")}.`);
  }
  lines.push(
    "Fix: install cardrunner into the workspace's .venv (`python3 -m venv .venv && " +
      ".venv/bin/pip install /path/to/cardrunner`, a checkout or its wheel) or select an " +
      "interpreter that has it, or set " +
      '"cardrunner.server.command" to the command that starts it, e.g. ' +
      '"/path/to/.venv/bin/cardrunner lsp".',
  );
  return lines.join(" ");
}
