/**
 * Which command starts `cardrunner lsp` for this workspace.
 *
 * Why an ordered search: most users never configure anything, and the server usually lives in the
 * project's own environment. The order is: the `cardrunner.server.command` setting, then
 * `uv run cardrunner lsp` (uv on PATH and a pyproject.toml/uv.lock), then `.venv`'s Python, then the
 * Python extension's selected interpreter (when cardrunner is installed in it), then `cardrunner`
 * on PATH. Every candidate looked at is recorded, so a failed start can say what was tried and how
 * to fix it. The file system and the Python extension sit behind `Probe`, so this module is pure
 * and unit-tested without VS Code.
 */

/** A resolved command: argv plus where it came from (shown in logs and errors). */
export interface ServerCommand {
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
  /** The Python extension's selected interpreter for the workspace, or undefined. */
  pythonInterpreter(): Promise<string | undefined>;
  /** Whether `python` can import cardrunner. */
  hasCardrunner(python: string): Promise<boolean>;
}

export interface Resolution {
  found: ServerCommand | undefined;
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

function command(argv: readonly string[], source: string): ServerCommand {
  const [head, ...args] = argv;
  return { command: head ?? "", args, source };
}

async function fromUv(p: Probe, folder: string, tried: string[]): Promise<ServerCommand | undefined> {
  const uv = await p.which("uv");
  const project = (await p.exists(joinPath(p.platform, folder, "pyproject.toml")))
    ? "pyproject.toml"
    : (await p.exists(joinPath(p.platform, folder, "uv.lock")))
      ? "uv.lock"
      : undefined;
  if (uv && project) {
    return command([uv, "run", "cardrunner", "lsp"], `uv and ${project} found`);
  }
  const why = !uv ? "uv not on PATH" : "no pyproject.toml or uv.lock in the workspace";
  tried.push(`uv run cardrunner lsp: ${why}`);
  return undefined;
}

async function fromVenv(p: Probe, folder: string, tried: string[]): Promise<ServerCommand | undefined> {
  const python = venvPython(folder, p.platform);
  if (await p.exists(python)) {
    return command([python, "-m", "cardrunner", "lsp"], "the workspace's .venv");
  }
  tried.push(`${python} -m cardrunner lsp: no such file`);
  return undefined;
}

async function fromPythonExtension(p: Probe, tried: string[]): Promise<ServerCommand | undefined> {
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
export async function resolveServerCommand(p: Probe): Promise<Resolution> {
  const tried: string[] = [];
  const setting = p.setting.filter((part) => part !== "");
  if (setting.length > 0) {
    return { found: command(setting, "setting cardrunner.server.command"), tried };
  }
  tried.push("setting cardrunner.server.command: empty");
  const folder = p.workspaceFolder;
  if (folder) {
    const found = (await fromUv(p, folder, tried)) ?? (await fromVenv(p, folder, tried));
    if (found) {
      return { found, tried };
    }
  } else {
    tried.push("uv / .venv: no workspace folder open");
  }
  const py = await fromPythonExtension(p, tried);
  if (py) {
    return { found: py, tried };
  }
  const onPath = await p.which("cardrunner");
  if (onPath) {
    return { found: command([onPath, "lsp"], "cardrunner on PATH"), tried };
  }
  tried.push("cardrunner lsp: cardrunner not on PATH");
  return { found: undefined, tried };
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
    "Fix: install cardrunner (e.g. `uv sync` or `pip install -e .` in a .venv), or set " +
      '"cardrunner.server.command" to the command that starts it, e.g. ' +
      '["/path/to/.venv/bin/python", "-m", "cardrunner", "lsp"].',
  );
  return lines.join(" ");
}
