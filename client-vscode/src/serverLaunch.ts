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
 * was tried and how to fix it.
 *
 * Why the workspace's own programs need the user's word: a trusted folder is still a stranger's
 * files. Its `.venv/bin/python` (even only asked "is cardrunner installed?") runs the `.pth` files
 * of its site-packages, and `uv run` builds the project; so the `.venv`, `uv` and an interpreter
 * that lies inside the workspace are never run on the workspace's word. They are *offered*: found
 * by file checks alone (a `.venv/bin/cardrunner`, a `uv.lock` that locks cardrunner, the command
 * a workspace's `.vscode/settings.json` names — `cardrunner demo` writes that one), and the client
 * asks the user once, naming the exact argv; the yes is kept per folder in the user's settings
 * (`cardrunner.server.allowedCommands`, machine-scoped, so a workspace cannot pre-answer it).
 * `cardrunner.server.workspaceEnvironments` (also machine-scoped) still says yes to every `.venv`
 * and `uv` at once. And every Python
 * launch gets `-P`: `python -m` would otherwise put the workspace first on `sys.path`, so a
 * `yaml.py` the repository ships would be imported by the server (the workers already use `-P`). The file system and the Python extension sit behind `Probe`, so
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
  /** The user's explicit yes (machine-scoped setting) to programs inside the workspace. */
  workspaceEnvironments?: boolean;
  /** `cardrunner.server.command` as the workspace's own `.vscode/settings.json` has it (read, never run). */
  workspaceCommand?: readonly string[];
  /** The user's answer for this folder and argv: kept in their settings (yes) or state (no). */
  answer?(argv: readonly string[]): "yes" | "no" | undefined;
  /** A small file's text (the `uv.lock`), or undefined. */
  readText?(path: string): Promise<string | undefined>;
}

export interface Resolution {
  found: ServerLaunch | undefined;
  /** One line per candidate looked at, in order, saying what was found. */
  tried: string[];
  /** Found but not chosen by the user: each is asked about (in order) before it may run. */
  offers: ServerLaunch[];
  /** Found, and the user said not to run it (the error still names it: "Use it" undoes the no). */
  declined?: ServerLaunch[];
}

/** The argv of a launch, as one list. */
export function launchArgv(launch: ServerLaunch): string[] {
  return [launch.command, ...launch.args];
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

/** `python` started so that nothing in the working folder shadows a module (`-P`, Python 3.11+). */
export function pythonServer(python: string): string[] {
  return [python, "-P", "-m", "cardrunner", "lsp"];
}

/** Whether `file` lies inside `folder` (by path text: nothing is resolved or run). */
export function isInside(file: string, folder: string, platform: string): boolean {
  const sep = platform === "win32" ? "\\" : "/";
  const norm = (p: string) => (platform === "win32" ? p.replace(/\//g, "\\").toLowerCase() : p);
  const base = norm(folder).replace(/[\\/]+$/, "");
  return norm(file).startsWith(base + sep);
}

const ASK_FIRST =
  "not used: programs inside the workspace run only once you allow them (the question, or " +
  "cardrunner.server.workspaceEnvironments in your user settings)";

function command(argv: readonly string[], source: string): ServerLaunch {
  const [head, ...args] = argv;
  return { command: head ?? "", args, source };
}

/** The program alone (`…/cardrunner`) serves the editor as `cardrunner lsp`. */
function withLsp(argv: readonly string[]): string[] {
  return argv.length === 1 && /(^|[\\/])cardrunner(\.exe)?$/i.test(argv[0] ?? "") ? [...argv, "lsp"] : [...argv];
}

/**
 * A candidate the user has not chosen: used on their recorded yes (or, for `.venv` and `uv`,
 * `workspaceEnvironments`), skipped on their no, else offered. Returns the launch to use.
 */
/** What the workspace offers: asked about, or already refused. */
interface Seen {
  offers: ServerLaunch[];
  declined: ServerLaunch[];
}

function consider(p: Probe, launch: ServerLaunch, tried: string[], seen: Seen): ServerLaunch | undefined {
  const answer = p.answer?.(launchArgv(launch));
  const shown = formatArgv(launchArgv(launch));
  if (answer === "yes") {
    return { ...launch, source: `${launch.source}, allowed in your user settings` };
  }
  if (answer === "no") {
    tried.push(`${shown} (${launch.source}): you said not to run it`);
    seen.declined.push(launch);
  } else {
    tried.push(`${shown} (${launch.source}): ${ASK_FIRST}`);
    seen.offers.push(launch);
  }
  return undefined;
}

async function fromUv(p: Probe, folder: string, tried: string[], seen: Seen): Promise<ServerLaunch | undefined> {
  const lock = joinPath(p.platform, folder, "uv.lock");
  const locked = await p.exists(lock);
  const uv = locked ? await p.which("uv") : undefined;
  if (!uv) {
    tried.push(`uv run cardrunner lsp: ${locked ? "uv not on PATH" : "no uv.lock in the workspace"}`);
    return undefined;
  }
  const launch = command([uv, "run", "cardrunner", "lsp"], "uv and uv.lock found");
  if (p.workspaceEnvironments) {
    return launch;
  }
  // Offered only where the lock has cardrunner: asking to `uv run` any uv project would be noise.
  const text = (await p.readText?.(lock)) ?? "";
  if (!/^name = "cardrunner"$/m.test(text)) {
    tried.push("uv run cardrunner lsp: the workspace's uv.lock has no cardrunner");
    return undefined;
  }
  return consider(p, launch, tried, seen);
}

async function fromVenv(p: Probe, folder: string, tried: string[], seen: Seen): Promise<ServerLaunch | undefined> {
  const python = venvPython(folder, p.platform);
  if (!(await p.exists(python))) {
    tried.push(`${python} -m cardrunner lsp: no such file`);
    return undefined;
  }
  const launch = command(pythonServer(python), "the workspace's .venv");
  if (!p.workspaceEnvironments) {
    // Asking the interpreter would run the .venv's .pth files: its cardrunner script is the sign.
    const bin = p.platform === "win32" ? ["Scripts", "cardrunner.exe"] : ["bin", "cardrunner"];
    if (!(await p.exists(joinPath(p.platform, folder, ".venv", ...bin)))) {
      tried.push(`${python}: cardrunner is not installed in the workspace's .venv`);
      return undefined;
    }
    return consider(p, launch, tried, seen);
  }
  if (await p.hasCardrunner(python)) {
    return launch;
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
  const folder = p.workspaceFolder;
  if (!p.workspaceEnvironments && folder && isInside(python, folder, p.platform)) {
    tried.push(`the Python extension's interpreter ${python} lies in the workspace, ${ASK_FIRST}`);
    return undefined;
  }
  if (await p.hasCardrunner(python)) {
    return command(pythonServer(python), "the Python extension's interpreter");
  }
  tried.push(`${python} -m cardrunner lsp: cardrunner is not installed in that interpreter`);
  return undefined;
}

/** Find the command that starts the server; `found` is undefined when nothing fits. */
export async function resolveServerLaunch(p: Probe): Promise<Resolution> {
  const tried: string[] = [];
  const seen: Seen = { offers: [], declined: [] };
  const { offers } = seen;
  const setting = p.setting.filter((part) => part !== "");
  if (setting.length > 0) {
    const source = setting.length === withLsp(setting).length ? "" : ", + lsp";
    return {
      found: command(withLsp(setting), `setting cardrunner.server.command${source}`),
      tried,
      offers,
      declined: seen.declined,
    };
  }
  tried.push("setting cardrunner.server.command: empty");
  const py = await fromPythonExtension(p, tried);
  if (py) {
    return { found: py, tried, offers, declined: seen.declined };
  }
  const asked = (p.workspaceCommand ?? []).filter((part) => part !== "");
  const folder = p.workspaceFolder;
  const fromWorkspace =
    asked.length > 0
      ? consider(p, command(withLsp(asked), "this workspace's .vscode/settings.json"), tried, seen)
      : undefined;
  if (fromWorkspace) {
    return { found: fromWorkspace, tried, offers, declined: seen.declined };
  }
  if (folder) {
    const found = (await fromVenv(p, folder, tried, seen)) ?? (await fromUv(p, folder, tried, seen));
    if (found) {
      return { found, tried, offers, declined: seen.declined };
    }
  } else {
    tried.push(".venv / uv: no workspace folder open");
  }
  if (offers.length > 0) {
    return { found: undefined, tried, offers, declined: seen.declined }; // asked about before any cardrunner on PATH
  }
  const onPath = await p.which("cardrunner");
  if (onPath) {
    return { found: command([onPath, "lsp"], "cardrunner on PATH"), tried, offers, declined: seen.declined };
  }
  tried.push(`cardrunner lsp: cardrunner not on PATH (${p.searchPath ?? "PATH is empty"})`);
  return { found: undefined, tried, offers, declined: seen.declined };
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

/**
 * The error shown when the server could not be started: two lines, what happened and the fix the
 * buttons do. The list of everything tried goes to the output (the toast cut it off before the fix).
 */
export function startFailureMessage(res: Resolution, error?: string): string {
  if (res.found && error) {
    return (
      `cardrunner: the server did not start: ${formatArgv(launchArgv(res.found))} (${res.found.source}): ` +
      `${describeStartError(error)}.\nPick the program that starts it, or open the output for the details.`
    );
  }
  const offer = res.offers[0];
  if (offer) {
    return (
      `cardrunner: no server started: found ${formatArgv(launchArgv(offer))} (${offer.source}), not allowed yet.` +
      "\nUse it, or pick the program that starts cardrunner."
    );
  }
  const refused = res.declined?.[0];
  if (refused) {
    return (
      `cardrunner: no server started: you chose not to start ${formatArgv(launchArgv(refused))} (${refused.source}).` +
      "\nUse it after all, or pick the program that starts cardrunner."
    );
  }
  return (
    "cardrunner: no server started: no cardrunner found (no setting, none in the workspace's .venv, none on PATH)." +
    "\nInstall it into the workspace's .venv, or pick the program that starts it."
  );
}
