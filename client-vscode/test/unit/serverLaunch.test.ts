import assert from "node:assert/strict";
import { chmod, mkdtemp, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { findOnPath, nodeProbe, pythonHasModule, stripJsonc, workspaceCommand } from "../../src/probe";
import {
  describeStartError,
  formatArgv,
  isInside,
  resolveServerLaunch,
  settingArgv,
  startFailureMessage,
  type Probe,
} from "../../src/serverLaunch";

/** A probe over an imaginary machine: the listed files exist, the listed tools are on PATH. */
function fakeProbe(over: {
  setting?: string[];
  files?: string[];
  onPath?: Record<string, string>;
  interpreter?: string;
  withCardrunner?: string[];
  folder?: string | undefined;
  workspaceEnvironments?: boolean;
}): Probe {
  const files = new Set(over.files ?? []);
  return {
    setting: over.setting ?? [],
    workspaceFolder: "folder" in over ? over.folder : "/ws",
    platform: "linux",
    which: async (name) => over.onPath?.[name],
    exists: async (p) => files.has(p),
    pythonInterpreter: async () => over.interpreter,
    hasCardrunner: async (py) => (over.withCardrunner ?? []).includes(py),
    workspaceEnvironments: over.workspaceEnvironments ?? true,
  };
}

describe("resolveServerLaunch", () => {
  it("uses the setting first, as given", async () => {
    const res = await resolveServerLaunch(
      fakeProbe({
        setting: ["/py", "-m", "cardrunner", "lsp"],
        onPath: { uv: "/bin/uv" },
        files: ["/ws/pyproject.toml"],
      }),
    );
    assert.deepEqual(res.found, {
      command: "/py",
      args: ["-m", "cardrunner", "lsp"],
      source: "setting cardrunner.server.command",
    });
  });

  it("uses uv when uv is on PATH and the workspace has a uv.lock", async () => {
    const res = await resolveServerLaunch(fakeProbe({ onPath: { uv: "/bin/uv" }, files: ["/ws/uv.lock"] }));
    assert.deepEqual(res.found, {
      command: "/bin/uv",
      args: ["run", "cardrunner", "lsp"],
      source: "uv and uv.lock found",
    });
  });

  it("falls back to .venv when uv is missing", async () => {
    const res = await resolveServerLaunch(
      fakeProbe({ files: ["/ws/uv.lock", "/ws/.venv/bin/python"], withCardrunner: ["/ws/.venv/bin/python"] }),
    );
    assert.deepEqual(res.found?.command, "/ws/.venv/bin/python");
    assert.deepEqual(res.found?.args, ["-P", "-m", "cardrunner", "lsp"]);
    const noUv = await resolveServerLaunch(fakeProbe({ files: ["/ws/uv.lock"] }));
    assert.match(noUv.tried.join("\n"), /uv not on PATH/);
  });

  it("needs a uv.lock for uv: a pyproject.toml alone has no environment to run in", async () => {
    const res = await resolveServerLaunch(
      fakeProbe({ onPath: { uv: "/bin/uv", cardrunner: "/u/bin/cardrunner" }, files: ["/ws/pyproject.toml"] }),
    );
    assert.deepEqual(res.found, { command: "/u/bin/cardrunner", args: ["lsp"], source: "cardrunner on PATH" });
    assert.match(res.tried.join("\n"), /no uv\.lock in the workspace/);
  });

  it("skips a .venv without cardrunner and says so", async () => {
    const res = await resolveServerLaunch(
      fakeProbe({ files: ["/ws/.venv/bin/python"], onPath: { cardrunner: "/u/bin/cardrunner" } }),
    );
    assert.equal(res.found?.command, "/u/bin/cardrunner");
    assert.match(res.tried.join("\n"), /cardrunner is not installed in the workspace's \.venv/);
  });

  it("prefers the Python extension's interpreter, then .venv, then uv, then PATH", async () => {
    const everything = {
      interpreter: "/sel/python",
      withCardrunner: ["/sel/python", "/ws/.venv/bin/python"],
      files: ["/ws/.venv/bin/python", "/ws/uv.lock"],
      onPath: { uv: "/bin/uv", cardrunner: "/u/bin/cardrunner" },
    };
    const order: string[] = [];
    for (const drop of ["interpreter", "venv", "uv", "path"]) {
      const res = await resolveServerLaunch(fakeProbe(everything));
      order.push(res.found?.source ?? "nothing");
      if (drop === "interpreter") everything.withCardrunner = ["/ws/.venv/bin/python"];
      if (drop === "venv") everything.files = ["/ws/uv.lock"];
      if (drop === "uv") everything.onPath = { uv: "", cardrunner: "/u/bin/cardrunner" };
    }
    assert.deepEqual(order, [
      "the Python extension's interpreter",
      "the workspace's .venv",
      "uv and uv.lock found",
      "cardrunner on PATH",
    ]);
  });

  it("says which PATH it searched when cardrunner is not on it", async () => {
    const res = await resolveServerLaunch({ ...fakeProbe({}), searchPath: "/usr/bin:/bin" });
    assert.match(res.tried.join("\n"), /cardrunner not on PATH \(\/usr\/bin:\/bin\)/);
  });

  it("uses the Python extension's interpreter only when cardrunner is installed in it", async () => {
    const without = await resolveServerLaunch(
      fakeProbe({ interpreter: "/usr/bin/python3", onPath: { cardrunner: "/u/bin/cardrunner" } }),
    );
    assert.deepEqual(without.found, { command: "/u/bin/cardrunner", args: ["lsp"], source: "cardrunner on PATH" });
    assert.match(without.tried.join("\n"), /cardrunner is not installed in that interpreter/);

    const withIt = await resolveServerLaunch(fakeProbe({ interpreter: "/opt/py", withCardrunner: ["/opt/py"] }));
    assert.equal(withIt.found?.command, "/opt/py");
  });

  it("finds nothing, and says what it tried, on a bare machine", async () => {
    const res = await resolveServerLaunch(fakeProbe({ folder: undefined }));
    assert.equal(res.found, undefined);
    assert.equal(res.tried.length, 4);
    assert.match(res.tried.join("\n"), /no workspace folder open/);
    assert.match(res.tried.join("\n"), /cardrunner not on PATH/);
    const message = startFailureMessage(res);
    assert.equal(message.split("\n").length, 2, message);
    assert.match(message, /^cardrunner: no server started: no cardrunner found .*none on PATH\)\.\n/);
    assert.match(message, /pick the program that starts it\.$/);
  });

  it("names the program found but not allowed yet, in two lines", () => {
    const offer = {
      command: "/d/.venv/bin/cardrunner",
      args: ["lsp"],
      source: "this workspace's .vscode/settings.json",
    };
    const message = startFailureMessage({ found: undefined, tried: ["a", "b", "c"], offers: [offer] });
    assert.equal(
      message,
      "cardrunner: no server started: found /d/.venv/bin/cardrunner lsp (this workspace's .vscode/settings.json), " +
        "not allowed yet.\nUse it, or pick the program that starts cardrunner.",
    );
  });

  it("names the command that ran and its error when a found command fails", () => {
    const message = startFailureMessage(
      {
        found: { command: "/p y/python", args: ["-m", "cardrunner", "lsp"], source: "the workspace's .venv" },
        tried: [],
        offers: [],
      },
      "spawn ENOENT",
    );
    assert.match(
      message,
      /^cardrunner: the server did not start: "\/p y\/python" -m cardrunner lsp \(the workspace's \.venv\): the command was not found \(spawn ENOENT\)\.\n/,
    );
    assert.equal(message.split("\n").length, 2);
  });

  it("explains a server that died during start-up instead of quoting the connection error", () => {
    assert.match(
      describeStartError("Pending response rejected since connection got disposed"),
      /exited during start-up; its error output is in the cardrunner output/,
    );
    assert.equal(describeStartError("something else"), "something else");
  });

  it("uses the Windows venv layout on win32", async () => {
    const probe = {
      ...fakeProbe({
        files: ["C:\\ws\\.venv\\Scripts\\python.exe"],
        withCardrunner: ["C:\\ws\\.venv\\Scripts\\python.exe"],
        folder: "C:\\ws",
      }),
      platform: "win32",
    };
    const res = await resolveServerLaunch(probe);
    assert.equal(res.found?.command, "C:\\ws\\.venv\\Scripts\\python.exe");
  });
});

describe("settingArgv", () => {
  it("takes a list as given and splits a string into words", () => {
    assert.deepEqual(settingArgv(["/py", "-m", "cardrunner", "lsp"]), ["/py", "-m", "cardrunner", "lsp"]);
    assert.deepEqual(settingArgv(["/py", 3, "", "lsp"]), ["/py", "lsp"]);
    assert.deepEqual(settingArgv("  /venv/bin/cardrunner   lsp "), ["/venv/bin/cardrunner", "lsp"]);
    assert.deepEqual(settingArgv('"/my env/bin/python" -m cardrunner lsp'), [
      "/my env/bin/python",
      "-m",
      "cardrunner",
      "lsp",
    ]);
    assert.deepEqual(settingArgv("C:\\venv\\Scripts\\cardrunner.exe lsp"), [
      "C:\\venv\\Scripts\\cardrunner.exe",
      "lsp",
    ]);
    assert.deepEqual(settingArgv("$HOME/x ~/y"), ["$HOME/x", "~/y"]);
    assert.deepEqual(settingArgv(""), []);
    assert.deepEqual(settingArgv(undefined), []);
    assert.deepEqual(settingArgv({ command: "x" }), []);
  });

  it("a string setting starts the server, and the program alone gets lsp", async () => {
    const res = await resolveServerLaunch(fakeProbe({ setting: settingArgv("/venv/bin/cardrunner lsp") }));
    assert.deepEqual(res.found, {
      command: "/venv/bin/cardrunner",
      args: ["lsp"],
      source: "setting cardrunner.server.command",
    });
    const bare = await resolveServerLaunch(fakeProbe({ setting: settingArgv("/venv/bin/cardrunner") }));
    assert.deepEqual(bare.found?.args, ["lsp"]);
  });
});

describe("formatArgv", () => {
  it("quotes only what needs quoting", () => {
    assert.equal(formatArgv(["/bin/python", "-m", "cardrunner", "a b"]), '/bin/python -m cardrunner "a b"');
  });
});

describe("the real probe", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "cardrunner-probe-"));
    await mkdir(path.join(dir, "bin"));
    await mkdir(path.join(dir, "ws", ".venv", "bin"), { recursive: true });
    await writeFile(path.join(dir, "bin", "cardrunner"), "#!/bin/sh\n");
    await chmod(path.join(dir, "bin", "cardrunner"), 0o755);
    await writeFile(path.join(dir, "bin", "notexec"), "");
    // A stand-in interpreter that "has" every module: the probe runs it to ask.
    await writeFile(path.join(dir, "ws", ".venv", "bin", "python"), "#!/bin/sh\nexit 0\n");
    await chmod(path.join(dir, "ws", ".venv", "bin", "python"), 0o755);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("finds executables on PATH and ignores non-executable files", async () => {
    const envPath = `${path.join(dir, "missing")}:${path.join(dir, "bin")}`;
    assert.equal(await findOnPath("cardrunner", envPath, "linux"), path.join(dir, "bin", "cardrunner"));
    assert.equal(await findOnPath("notexec", envPath, "linux"), undefined);
  });

  it("resolves the workspace's .venv on a real file system", async () => {
    const probe = nodeProbe([], path.join(dir, "ws"), async () => undefined, true);
    const res = await resolveServerLaunch({ ...probe, which: async () => undefined });
    assert.equal(res.found?.command, path.join(dir, "ws", ".venv", "bin", "python"));
  });

  it("asks a real interpreter whether a module is importable", async () => {
    const python = (await findOnPath("python3")) ?? (await findOnPath("python"));
    assert.ok(python, "a Python interpreter on PATH");
    assert.equal(await pythonHasModule(python, "json"), true);
    assert.equal(await pythonHasModule(python, "no_such_module_cardrunner_test"), false);
    assert.equal(await pythonHasModule(path.join(dir, "bin", "notexec"), "json"), false);
  });
});

describe("a stranger's workspace", () => {
  let dir = "";
  let ws = "";
  let markers = "";
  const payload = (name: string) => `#!/bin/sh\ntouch "${markers}/${name}"\nexit 0\n`;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "cardrunner-hostile-"));
    ws = path.join(dir, "ws");
    markers = path.join(dir, "markers");
    await mkdir(markers);
    await mkdir(path.join(ws, ".venv", "bin"), { recursive: true });
    await mkdir(path.join(dir, "bin"));
    // Every program the workspace brings, or that would build it, touches a marker when run.
    await writeFile(path.join(ws, ".venv", "bin", "python"), payload("venv-python"));
    await writeFile(path.join(ws, "uv.lock"), "");
    await writeFile(path.join(dir, "bin", "uv"), payload("uv"));
    await writeFile(path.join(dir, "bin", "cardrunner"), "#!/bin/sh\n");
    for (const file of [
      path.join(ws, ".venv", "bin", "python"),
      path.join(dir, "bin", "uv"),
      path.join(dir, "bin", "cardrunner"),
    ]) {
      await chmod(file, 0o755);
    }
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function probe(workspaceEnvironments: boolean): Probe {
    const interpreter = async () => path.join(ws, ".venv", "bin", "python"); // auto-selected
    const real = nodeProbe([], ws, interpreter, workspaceEnvironments);
    return { ...real, which: (name) => findOnPath(name, path.join(dir, "bin"), "linux") };
  }

  it("runs none of the workspace's programs until the user allows them", async () => {
    const res = await resolveServerLaunch(probe(false));
    assert.deepEqual(res.found, {
      command: path.join(dir, "bin", "cardrunner"),
      args: ["lsp"],
      source: "cardrunner on PATH",
    });
    assert.deepEqual(await readdir(markers), []);
    const tried = res.tried.join("\n");
    assert.match(tried, /interpreter .* lies in the workspace, not used/);
    assert.match(tried, /\.venv\/bin\/python: cardrunner is not installed in the workspace's \.venv/);
    assert.match(tried, /uv run cardrunner lsp: the workspace's uv\.lock has no cardrunner/);
    assert.deepEqual(res.offers, []);
  });

  it("offers, never runs, what the workspace names or holds, before PATH; the user's answer decides", async () => {
    const evil = path.join(ws, "evil.sh");
    await writeFile(evil, payload("workspace-command"));
    await chmod(evil, 0o755);
    await mkdir(path.join(ws, ".vscode"), { recursive: true });
    // What `cardrunner demo` writes, plus a workspace trying to answer the question itself.
    await writeFile(
      path.join(ws, ".vscode", "settings.json"),
      `{\n  // the demo's line\n  "cardrunner.server.command": ["${evil}", "lsp"],\n` +
        `  "cardrunner.server.allowedCommands": {"${ws}": ["${evil}", "lsp"]},\n  "cardrunner.server.workspaceEnvironments": true,\n}\n`,
    );
    await writeFile(path.join(ws, ".venv", "bin", "cardrunner"), payload("venv-cardrunner"));
    await writeFile(path.join(ws, "uv.lock"), 'version = 1\n\n[[package]]\nname = "cardrunner"\n');
    const answers = new Map<string, "yes" | "no">();
    const base = { ...probe(false), workspaceCommand: await workspaceCommand(ws) };
    const resolve = () => resolveServerLaunch({ ...base, answer: (argv) => answers.get(JSON.stringify(argv)) });
    try {
      const asked = await resolve();
      assert.equal(asked.found, undefined);
      assert.deepEqual(
        asked.offers.map((o) => [o.command, ...o.args]),
        [
          [evil, "lsp"],
          [path.join(ws, ".venv", "bin", "python"), "-P", "-m", "cardrunner", "lsp"],
          [path.join(dir, "bin", "uv"), "run", "cardrunner", "lsp"],
        ],
      );
      assert.deepEqual(await readdir(markers), [], "nothing the workspace brings has run");
      answers.set(JSON.stringify([evil, "lsp"]), "no");
      answers.set(JSON.stringify(asked.offers[1] && [asked.offers[1].command, ...asked.offers[1].args]), "yes");
      const yes = await resolve();
      assert.equal(yes.found?.command, path.join(ws, ".venv", "bin", "python"));
      assert.match(yes.found?.source ?? "", /allowed in your user settings/);
      assert.match(yes.tried.join("\n"), /evil\.sh lsp .*: you said not to run it/);
      for (const offer of asked.offers) {
        answers.set(JSON.stringify([offer.command, ...offer.args]), "no");
      }
      const none = await resolve();
      assert.equal(none.found?.source, "cardrunner on PATH", "every no given: PATH's cardrunner");
      assert.deepEqual(await readdir(markers), []);
    } finally {
      await rm(path.join(ws, ".vscode"), { recursive: true, force: true });
      await rm(path.join(ws, ".venv", "bin", "cardrunner"), { force: true });
      await writeFile(path.join(ws, "uv.lock"), "");
    }
  });

  it("with the user's yes, uses the workspace's interpreter, safe-path", async () => {
    const res = await resolveServerLaunch(probe(true));
    assert.deepEqual(await readdir(markers), ["venv-python"]); // the control: asking runs it
    assert.deepEqual(res.found?.args, ["-P", "-m", "cardrunner", "lsp"]);
  });

  it("lets no workspace choose the program or loosen a limit (machine scope)", async () => {
    const manifest = JSON.parse(await readFile(path.join(__dirname, "..", "..", "..", "package.json"), "utf8"));
    const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
    for (const key of [
      "cardrunner.server.command",
      "cardrunner.server.workspaceEnvironments",
      "cardrunner.server.allowedCommands",
      "cardrunner.limits.maxRounds",
      "cardrunner.limits.maxTokens",
      "cardrunner.limits.maxCostUsd",
      "cardrunner.limits.maxWallSeconds",
    ]) {
      assert.equal(properties[key]?.scope, "machine", key);
    }
  });
});

describe("isInside", () => {
  it("compares by path text, on Windows without case", () => {
    assert.equal(isInside("/ws/.venv/bin/python", "/ws", "linux"), true);
    assert.equal(isInside("/ws/.venv/bin/python", "/ws/", "linux"), true);
    assert.equal(isInside("/wsx/bin/python", "/ws", "linux"), false);
    assert.equal(isInside("c:/WS/.venv/Scripts/python.exe", "C:\\ws", "win32"), true);
  });
});

describe("stripJsonc", () => {
  it("drops comments and trailing commas, not a // inside a string", () => {
    const text = '{\n // c\n "a": "https://x", /* b */ "b": [1, 2,],\n}';
    assert.deepEqual(JSON.parse(stripJsonc(text)), { a: "https://x", b: [1, 2] });
  });
});
