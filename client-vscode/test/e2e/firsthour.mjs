// The first hour in VS Code, as a newcomer meets it: a fresh profile with NO settings written by
// the test, the server found and asked about once, then the card run, reviewed and Done.
//
//   --scenario demo       the README's second command (`cardrunner demo`) with the first's .venv,
//                         the demo folder opened, one click on cardrunner's question, ▶ Run card,
//                         the review accepted, the card Done (and the README's pictures, --images)
//   --scenario clone      the README's editor path: a clone of this repository with its own .venv,
//                         opened untrusted (Restricted Mode says why there is no lens, and a
//                         status bar item stays until Trust), the question answered "Don't
//                         start", then the error's "Use it":
//                         ▶ Run card appears on its cards
//   --scenario workspace  a workspace whose .vscode/settings.json names a program and tries to
//                         pre-answer the question: nothing starts until the user says yes, and a
//                         no leaves a two-line error with buttons that do the fix ("Pick program…"
//                         on this machine's cardrunner starts the server: the lens appears)
// Options as run.mjs's: --vsix --python --node --code-server --playwright --chromium --artifacts
// --images --keep. The viewport is a laptop's, 1280×800.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { freePort, run, startCodeServer, stopAll, waitFor } from "./processes.mjs";
import { launchBrowser, Workbench } from "./ui.mjs";
import { createWorkspace, CARD_PATH } from "./workspace.mjs";

const { values: opt } = parseArgs({
  options: {
    vsix: { type: "string" },
    python: { type: "string" },
    "code-server": { type: "string" },
    playwright: { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    node: { type: "string", default: process.execPath },
    artifacts: { type: "string", default: path.resolve("test-artifacts/vscode/first-hour") },
    scenario: { type: "string", default: "demo" },
    keep: { type: "boolean", default: false },
    images: { type: "string", default: "" },
  },
});

const started = Date.now();
const step = (text) =>
  console.log(`[first-hour ${opt.scenario} ${((Date.now() - started) / 1000).toFixed(1)} s] ${text}`);
const REPO = path.resolve(import.meta.dirname, "../../..");
const tmp = mkdtempSync(path.join(tmpdir(), "cardrunner-first-hour-"));
const logDir = path.join(opt.artifacts, "logs");
const userDataDir = path.join(tmp, "user-data");
rmSync(opt.artifacts, { recursive: true, force: true });
mkdirSync(logDir, { recursive: true });

// A newcomer's machine: their own home (no ~/.profile putting a cardrunner on PATH), config and
// temporary folders; the same for `cardrunner demo` and code-server, as for one user.
const home = path.join(tmp, "home");
mkdirSync(home, { recursive: true });
const env = {
  ...process.env,
  PATH: `${path.dirname(opt.node)}:/usr/local/bin:/usr/bin:/bin`,
  HOME: home,
  TMPDIR: tmp,
  XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
  XDG_DATA_HOME: path.join(tmp, "xdg-data"),
};
delete env.VIRTUAL_ENV;

function cardrunnerLog() {
  const dir = path.join(userDataDir, "logs");
  if (!existsSync(dir)) {
    return "";
  }
  return readdirSync(dir, { recursive: true })
    .filter((rel) => path.basename(String(rel)) === "cardrunner.log")
    .map((rel) => readFileSync(path.join(dir, String(rel)), "utf-8"))
    .join("\n");
}

/** Every settings.json in the profile (User/, Machine/): the test writes none of them. */
function profileSettings() {
  if (!existsSync(userDataDir)) {
    return {};
  }
  return Object.fromEntries(
    readdirSync(userDataDir, { recursive: true })
      .filter((rel) => path.basename(String(rel)) === "settings.json")
      .map((rel) => [String(rel), readFileSync(path.join(userDataDir, String(rel)), "utf-8")]),
  );
}

/** The README's second command, with the first's .venv (this repository's): the demo folder. */
async function readmeDemo() {
  const cardrunner = path.join(path.dirname(opt.python), "cardrunner");
  const out = execFileSync(cardrunner, ["demo"], { env, cwd: home, encoding: "utf-8", timeout: 600_000 });
  writeFileSync(path.join(logDir, "cardrunner-demo.out"), out);
  const root = /^The demo repository is (\S+)$/m.exec(out)?.[1];
  const card = /^Open it in an editor \((cards\/\S+\.md) is New again/m.exec(out)?.[1];
  if (!root || !card || !out.includes('answer "Start it"')) {
    throw new Error(`cardrunner demo did not say which folder and card to open, and what VS Code asks:\n${out}`);
  }
  step(`cardrunner demo made ${root}; it names ${card}`);
  return { folder: root, card, program: [cardrunner, "lsp"] };
}

/** The README's editor path on a clone of this repository: its own .venv with cardrunner. */
async function readmeClone() {
  const clone = path.join(tmp, "cardrunner");
  execFileSync("git", ["clone", "-q", REPO, clone], { env });
  // `python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'`, with the dependencies taken from
  // the test's own environment (a .pth) instead of downloaded again: the same .venv/bin layout.
  execFileSync("python3", ["-m", "venv", path.join(clone, ".venv")], { env });
  const site = execFileSync(
    path.join(clone, ".venv", "bin", "python"),
    ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
    { encoding: "utf-8" },
  ).trim();
  const deps = execFileSync(opt.python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
    encoding: "utf-8",
  }).trim();
  writeFileSync(path.join(site, "e2e-deps.pth"), `${deps}\n`);
  execFileSync(path.join(clone, ".venv", "bin", "pip"), ["install", "-q", "--no-deps", "-e", clone], {
    env,
    timeout: 300_000,
  });
  const card = path.join(
    "cards",
    readdirSync(path.join(clone, "cards"))
      .filter((f) => f.endsWith(".md"))
      .sort()[0],
  );
  step(`cloned into ${clone}, .venv with cardrunner; card ${card}`);
  return {
    folder: clone,
    card,
    program: [path.join(clone, ".venv", "bin", "python"), "-P", "-m", "cardrunner", "lsp"],
  };
}

/** A workspace that names a program (it leaves a marker when run) and tries to allow it itself. */
function hostileWorkspace() {
  const ws = path.join(tmp, "workspace");
  createWorkspace(ws);
  const marker = path.join(tmp, "workspace-program-ran");
  const program = path.join(tmp, "workspace-server.sh");
  writeFileSync(program, `#!/bin/sh\ntouch "${marker}"\nexit 1\n`);
  chmodSync(program, 0o755);
  mkdirSync(path.join(ws, ".vscode"), { recursive: true });
  writeFileSync(
    path.join(ws, ".vscode", "settings.json"),
    JSON.stringify(
      {
        "cardrunner.server.command": [program, "lsp"],
        "cardrunner.server.allowedCommands": { [ws]: [program, "lsp"] },
        "cardrunner.server.workspaceEnvironments": true,
      },
      null,
      2,
    ),
  );
  return { folder: ws, card: CARD_PATH, program: [program, "lsp"], marker };
}

/** cardrunner's own question: a modal naming the exact program. Returns the dialog. */
async function theQuestion(wb, program) {
  const dialog = wb.page.locator(".monaco-dialog-box").filter({ hasText: /Start cardrunner's language server with/ });
  await dialog.waitFor({ timeout: 120_000 });
  const text = (await dialog.innerText()).replace(/\u00a0/g, " ");
  const shown = program.join(" ");
  if (!text.includes(shown)) {
    throw new Error(`the question should name ${shown}: ${text}`);
  }
  if (/starting the server: /.test(cardrunnerLog())) {
    throw new Error("the server was started before the user answered");
  }
  step(`asked: ${text.replace(/\s+/g, " ").slice(0, 240)}`);
  return dialog;
}

async function answer(wb, dialog, button) {
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: button }).click();
  await dialog.waitFor({ state: "detached", timeout: 30_000 });
  step(`answered "${button}"`);
}

/** ▶ Run card on the open card, accept the review, wait for Done in the card and in git. */
async function runAndAccept(wb, folder, card) {
  const lens = wb.lens("Run card");
  await lens.waitFor({ timeout: 120_000 });
  await wb.shot("run-card-lens");
  await lens.click();
  step("clicked ▶ Run card");
  const toast = wb.notification(/waits for review/);
  // The demo's card drives a real Textual app through the UI MCP server: ~3.5 minutes under a
  // shared CI machine's load (measured), so the wait is generous.
  await toast.waitFor({ timeout: 600_000 });
  await wb.clickNotificationButton(toast, "Review");
  await wb.page.locator(".monaco-diff-editor").first().waitFor({ timeout: 30_000 });
  // The review's files, criteria and decisions beside the diff (cardrunner's side bar), not over it.
  const list = await wb.reviewList();
  const labels = await wb.reviewRows(list);
  if (
    labels.some((l) => l.includes(".cardrunner/")) ||
    !labels.some((l) => /^Acceptance criteria \d+ of \d+/.test(l))
  ) {
    throw new Error(`the review list should be repository-relative and count the criteria: ${labels.join(" | ")}`);
  }
  if (await wb.page.locator(".quick-input-widget").isVisible()) {
    throw new Error("a QuickPick covers the review's diff");
  }
  const headers = await wb.page.locator(".multiDiffEntry").allInnerTexts();
  const renamed = await wb.page.locator(".multiDiffEntry .status.renamed").count();
  if (headers.length === 0 || renamed > 0 || headers.some((h) => h.includes(".cardrunner/"))) {
    throw new Error(`the diff headers should be repository-relative: ${headers.join(" | ")}`);
  }
  // The first criterion's evidence unfolded under it, as a reviewer reads it.
  await list
    .locator(".monaco-list-row")
    .filter({ hasText: /^\s*✓ 1\. / })
    .first()
    .click();
  const columns = await wb.diffColumns();
  step(`review list: ${labels.join(" | ")}; the diff shows ${columns} columns of code at 1280×800`);
  if (columns < 60) {
    throw new Error(`the diff should show at least 60 columns of code at 1280×800, not ${columns}`);
  }
  await wb.shot("review");
  await wb.image("vscode-review");
  await wb.clickReviewRow(list, "Accept & commit");
  step("review accepted");
  await waitFor(
    "the card to say state: Done",
    () => /^state: Done\b/m.test(readFileSync(path.join(folder, card), "utf-8")),
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  const log = execFileSync("git", ["-C", folder, "log", "--format=%s", "-3"], { encoding: "utf-8" });
  if (!/→ Done/.test(log)) {
    throw new Error(`git should have the card's Done: ${log}`);
  }
  await wb.openFile(card);
  await wb.shot("card-done");
  await wb.image("vscode-card-done");
  step(`card Done; git: ${log.split("\n").slice(0, 2).join(" | ")}`);
}

/**
 * Restricted Mode, as a newcomer meets it on a folder VS Code does not trust yet: no server and no
 * question, but a notice saying why there is no ▶ Run card, whose Trust… opens Workspace Trust,
 * and a status bar item that stays after the notice is gone (VS Code hides notices after a few
 * seconds): its click opens Workspace Trust too, and Trust there takes it away.
 */
async function restrictedThenTrust(wb) {
  // code-server asks no trust question at start: the folder opens in Restricted Mode (a banner).
  const notice = wb.notification(/Restricted Mode/);
  await notice.waitFor({ timeout: 60_000 });
  const message = await wb.notificationMessage(notice);
  if (!/no ▶ Run card/.test(message) || /starting the server: /.test(cardrunnerLog())) {
    throw new Error(`Restricted Mode should start nothing and say why there is no lens: ${message}`);
  }
  if ((await wb.page.locator(".monaco-dialog-box").count()) > 0) {
    throw new Error("an untrusted folder should not be asked about its server");
  }
  const sign = wb.statusItem(/cardrunner: Restricted Mode/);
  await sign.waitFor({ timeout: 30_000 });
  await wb.shot("restricted-mode");
  step(`notice: ${message}; status bar: ${(await sign.textContent())?.trim()}`);
  const editor = wb.page.locator(".workspace-trust-editor");
  await wb.clickNotificationButton(notice, "Trust");
  await editor.waitFor({ timeout: 30_000 });
  await wb.closeOverlay(".workspace-trust-editor");
  step("the notice's Trust… opened the Workspace Trust editor; closed it untrusted");
  if (!(await sign.isVisible())) {
    throw new Error("the status bar's Restricted Mode sign should stay while the folder is untrusted");
  }
  await sign.click();
  await editor.waitFor({ timeout: 30_000 });
  await wb.shot("trust-editor");
  await editor
    .locator(".workspace-trust-buttons-row .monaco-button", { hasText: /^\s*Trust\s*$/ })
    .first()
    .click();
  await sign.waitFor({ state: "hidden", timeout: 30_000 });
  step("the status bar's sign opened the Workspace Trust editor; Trust took the sign away");
}

/** "Pick program…" on this machine's cardrunner: kept as the user's command, the server starts. */
async function pickProgram(wb, target, program) {
  await wb.closeOverlay(".settings-editor"); // what Open Settings showed
  await wb.runCommand("cardrunner: Restart language server");
  const toast = wb.notification(/no server started/);
  await toast.waitFor({ timeout: 60_000 });
  await wb.clickNotificationButton(toast, "Pick program");
  const dialog = await wb.quickInput(/The cardrunner program/);
  // VS Code's own file dialog fills in the folder once it has read it: type after that, or the
  // path typed is replaced.
  const input = dialog.locator("input");
  await waitFor("the file dialog to show the folder", async () => (await input.inputValue()).endsWith("/"));
  await dialog.locator(".monaco-list-row").first().waitFor({ timeout: 30_000 });
  await input.fill(program);
  await waitFor("the program's path typed", async () => (await input.inputValue()) === program);
  await wb.shot("pick-program");
  await wb.page.keyboard.press("Enter");
  await dialog.waitFor({ state: "hidden", timeout: 10_000 }).catch(async () => {
    await dialog.locator(".monaco-button", { hasText: "Use this program" }).click();
    await dialog.waitFor({ state: "hidden", timeout: 20_000 });
  });
  await wb.openFile(target.card);
  await wb.lens("Run card").waitFor({ timeout: 120_000 });
  await wb.shot("picked-program-lens");
  const kept = Object.values(profileSettings()).join("\n");
  if (!kept.includes(program) || existsSync(target.marker)) {
    throw new Error(`the picked program should be the user's command, the workspace's never run: ${kept}`);
  }
  step(`"Pick program…" ${program}: the server started, ▶ Run card shows`);
}

/** The no: two lines, the buttons that do the fix, and the program still not run. */
async function declined(wb, target) {
  const toast = wb.notification(/no server started/);
  await toast.waitFor({ timeout: 60_000 });
  const message = await wb.notificationMessage(toast);
  const buttons = (await toast.locator(".monaco-button").allInnerTexts()).map((t) => t.trim()).filter((t) => t);
  step(`error: ${message} [${buttons.join(", ")}]`);
  await wb.shot("declined-error");
  if (!message.includes(target.program.join(" ")) || !/chose not to start/.test(message) || message.length > 400) {
    throw new Error(`the error should name the found program in two short lines: ${message}`);
  }
  for (const b of ["Use it", "Pick program…", "Open Settings", "Show output"]) {
    if (!buttons.includes(b)) {
      throw new Error(`the error should offer "${b}": ${buttons.join(", ")}`);
    }
  }
  if (existsSync(target.marker)) {
    throw new Error("the workspace's program ran without the user's yes");
  }
  await wb.clickNotificationButton(toast, "Open Settings");
  const tab = wb.page.locator(".settings-tabs-widget .action-label.checked");
  await tab.waitFor({ timeout: 30_000 });
  const where = (await tab.innerText()).trim();
  await wb.shot("settings-tab");
  if (!/Remote/.test(where)) {
    throw new Error(`Open Settings should land on the Remote tab (machine settings in code-server): ${where}`);
  }
  step(`Open Settings opened the "${where}" tab`);
}

async function main() {
  const target =
    opt.scenario === "demo" ? await readmeDemo() : opt.scenario === "clone" ? await readmeClone() : hostileWorkspace();
  const extensionsDir = path.join(tmp, "extensions");
  await run(
    opt["code-server"],
    ["--user-data-dir", userDataDir, "--extensions-dir", extensionsDir, "--install-extension", opt.vsix],
    { env },
  );
  const before = profileSettings();
  if (Object.keys(before).length > 0) {
    throw new Error(`the profile should start with no settings: ${JSON.stringify(before)}`);
  }
  const port = await freePort();
  await startCodeServer({
    codeServer: opt["code-server"],
    port,
    workspace: target.folder,
    userDataDir,
    extensionsDir,
    env,
    logDir,
    workspaceTrust: opt.scenario === "clone", // the clone opens untrusted: Restricted Mode first
  });
  step(`code-server on ${port}, fresh profile, ${target.folder}`);
  const browser = await launchBrowser({ playwrightDir: opt.playwright, chromium: opt.chromium });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const wb = new Workbench(page, opt.artifacts, opt.images);
  try {
    await wb.open(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(target.folder)}`);
    if (opt.scenario === "clone") {
      await restrictedThenTrust(wb);
    }
    const dialog = await theQuestion(wb, target.program);
    await wb.shot("question");
    if (opt.scenario === "workspace") {
      await answer(wb, dialog, "Don't start");
      await declined(wb, target);
      await pickProgram(wb, target, path.join(path.dirname(opt.python), "cardrunner"));
      return;
    }
    if (opt.scenario === "clone") {
      // A no, then the error's "Use it": the found program starts after all (as a Start it would).
      await answer(wb, dialog, "Don't start");
      const error = wb.notification(/no server started/);
      await error.waitFor({ timeout: 60_000 });
      await wb.shot("clone-declined-error");
      step(`error: ${await wb.notificationMessage(error)}`);
      await wb.clickNotificationButton(error, "Use it");
      step('clicked the error\'s "Use it"');
      await wb.closeOverlay(".workspace-trust-editor"); // what Trust… showed
    } else {
      await wb.image("vscode-first-start");
      await answer(wb, dialog, "Start it");
    }
    await wb.openFile(target.card);
    await waitFor(
      "the server to start with the allowed program",
      () => new RegExp(`starting the server: .*allowed in your user settings`).test(cardrunnerLog()),
      { timeoutMs: 60_000 },
    );
    const kept = Object.values(profileSettings()).join("\n");
    if (!kept.includes("cardrunner.server.allowedCommands") || !kept.includes(target.folder)) {
      throw new Error(`the yes should be kept in the user's settings: ${kept}`);
    }
    step("the yes is in the user's settings; the server started");
    if (opt.scenario === "clone") {
      await wb.lens("Run card").waitFor({ timeout: 120_000 });
      await wb.shot("clone-lens");
      step("▶ Run card on the clone's card");
      return;
    }
    await runAndAccept(wb, target.folder, target.card);
  } catch (err) {
    await wb.shot("failure").catch(() => undefined);
    writeFileSync(path.join(logDir, "page.html"), await page.content().catch(() => ""));
    console.error(`notifications: ${(await wb.notifications().catch(() => [])).join(" | ")}`);
    throw err;
  } finally {
    await browser.close();
  }
}

let failed = false;
try {
  await main();
} catch (err) {
  failed = true;
  console.error(`[first-hour ${opt.scenario}] FAILED: ${err.stack ?? err}`);
} finally {
  await stopAll();
  if (existsSync(path.join(userDataDir, "logs"))) {
    cpSync(path.join(userDataDir, "logs"), path.join(logDir, "vscode"), { recursive: true });
  }
  if (!opt.keep) {
    rmSync(tmp, { recursive: true, force: true });
  }
}
console.log(`vscode-e2e-first-hour-${opt.scenario}: ${failed ? "0 passed, 1 failed" : "1 passed, 0 failed"}`);
process.exit(failed ? 1 : 0);
