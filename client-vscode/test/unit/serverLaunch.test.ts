import assert from "node:assert/strict";
import { chmod, mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { findOnPath, nodeProbe, pythonHasModule } from "../../src/probe";
import {
  describeStartError,
  formatArgv,
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
    assert.deepEqual(res.found?.args, ["-m", "cardrunner", "lsp"]);
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
    const message = startFailureMessage(res);
    assert.match(message, /did not start/);
    assert.match(message, /no workspace folder open/);
    assert.match(message, /cardrunner not on PATH/);
    assert.match(message, /cardrunner\.server\.command/);
  });

  it("names the command that ran and its error when a found command fails", () => {
    const message = startFailureMessage(
      {
        found: { command: "/p y/python", args: ["-m", "cardrunner", "lsp"], source: "the workspace's .venv" },
        tried: [],
      },
      "spawn ENOENT",
    );
    assert.match(
      message,
      /Ran: "\/p y\/python" -m cardrunner lsp \(the workspace's \.venv\)\. Error: the command was not found \(spawn ENOENT\)/,
    );
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
    const probe = nodeProbe([], path.join(dir, "ws"), async () => undefined);
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
