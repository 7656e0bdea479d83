// The processes the end-to-end test runs: the fake Messages API and code-server.
//
// Why each in its own process group: code-server starts an extension host, which starts the
// language server, which starts test commands; stopping the group stops them all and nothing else.
// Every wait has a deadline and names what it waited for, so a failure says where it stuck.
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import * as path from "node:path";

/** Poll `check` until it returns a truthy value; throw naming `what` after `timeoutMs`. */
export async function waitFor(what, check, { timeoutMs = 30_000, intervalMs = 250 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value) {
        return value;
      }
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError ? ` (last error: ${lastError.message ?? lastError})` : "";
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const children = [];

/** Start a process in its own group, its output teed to `<logDir>/<name>.log`. */
function start(name, command, args, { env, cwd, logDir }) {
  mkdirSync(logDir, { recursive: true });
  const log = createWriteStream(path.join(logDir, `${name}.log`));
  const child = spawn(command, args, { env, cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  child.exitInfo = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.label = name;
  children.push(child);
  return child;
}

/** Run a command to its end; reject with its output when it fails. */
export function run(command, args, { env, cwd, timeoutMs = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${out}`));
    });
  });
}

/** `python -m cardrunner.testing.fake_api_cli`; resolves with its base URL once it prints READY. */
export async function startFakeApi({ python, transcriptFile, violationsFile, requestsFile, logDir }) {
  const args = ["-m", "cardrunner.testing.fake_api_cli", "--port", "0", "--transcript", transcriptFile];
  args.push("--violations-file", violationsFile, "--requests-file", requestsFile);
  const child = start("fake-api", python, args, { env: process.env, logDir });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`fake API printed no READY line in 30 s: ${seen}`)), 30_000);
    child.stdout.on("data", (chunk) => {
      seen += chunk;
      const match = /^READY (\S+)/m.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => reject(new Error(`fake API exited (${code}) before READY: ${seen}`)));
  });
  return { child, url };
}

/** Start code-server on `port` for `workspace`; resolves when /healthz answers. Workspace Trust is
 * off unless `workspaceTrust` (then the folder opens untrusted, in Restricted Mode). */
export async function startCodeServer({
  codeServer,
  port,
  workspace,
  userDataDir,
  extensionsDir,
  env,
  logDir,
  workspaceTrust = false,
}) {
  const args = [
    "--bind-addr",
    `127.0.0.1:${port}`,
    "--auth",
    "none",
    "--disable-telemetry",
    "--disable-update-check",
    // Workspace Trust on: the folder opens in Restricted Mode until the user trusts it.
    ...(workspaceTrust ? [] : ["--disable-workspace-trust"]),
    "--disable-getting-started-override",
    "--user-data-dir",
    userDataDir,
    "--extensions-dir",
    extensionsDir,
    workspace,
  ];
  const child = start("code-server", codeServer, args, { env, logDir });
  const exited = child.exitInfo.then(({ code }) => {
    throw new Error(`code-server exited (${code}) while starting; see ${logDir}/code-server.log`);
  });
  const healthy = waitFor("code-server /healthz", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, {
    timeoutMs: 60_000,
  });
  await Promise.race([healthy, exited]);
  return child;
}

/** Stop every process this test started (whole process groups), waiting for each to exit. */
export async function stopAll() {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        return;
      }
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        return;
      }
      const killed = setTimeout(() => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5_000);
      await child.exitInfo;
      clearTimeout(killed);
    }),
  );
}
