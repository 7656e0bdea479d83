// End-to-end: the packaged extension in a real VS Code (code-server), a real language server
// (`cardrunner lsp`), a fake Messages API — the whole user path, from "▶ Run card" to a commit.
//
// Usage (run.sh passes these): node run.mjs --vsix F --python P --code-server B --playwright D
//   --chromium C [--artifacts DIR] [--until activation|full] [--keep]
// `--server fake` uses client-vscode/test/fake_lsp_server.py instead of `cardrunner lsp`: the editor side
// alone, including dropping a file from the commit. `--until activation` stops once the extension is shown to start the server (useful while the
// server lacks features). Screenshots and logs land in the artifacts folder at every step.
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  cpSync,
  symlinkSync,
  writeFileSync,
  mkdirSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { freePort, run, startCodeServer, startFakeApi, stopAll, waitFor } from "./processes.mjs";
import {
  commentAndReject,
  criterionTicked,
  liveRunView,
  problemsPanel,
  runFromBoard,
  waitingForReview,
} from "./board.mjs";
import { launchBrowser, Workbench } from "./ui.mjs";
import {
  CANCEL_CARD_PATH,
  CARD_PATH,
  changedFiles,
  commitMessage,
  commits,
  createWorkspace,
  gitShow,
  LINE_COMMENT,
  NARRATION,
  REJECT_REASON,
  SOURCE_AFTER,
  transcript,
} from "./workspace.mjs";

const { values: opt } = parseArgs({
  options: {
    vsix: { type: "string" },
    python: { type: "string" },
    "code-server": { type: "string" },
    playwright: { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    node: { type: "string", default: process.execPath },
    artifacts: { type: "string", default: path.resolve("test-artifacts/vscode") },
    until: { type: "string", default: "full" },
    server: { type: "string", default: "real" },
    keep: { type: "boolean", default: false },
    images: { type: "string", default: "" },
  },
});
for (const key of ["vsix", "python", "code-server", "playwright"]) {
  if (!opt[key]) {
    console.error(`missing --${key}`);
    process.exit(2);
  }
}

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
const step = (text) => console.log(`[e2e ${elapsed()}] ${text}`);

const MISSING_PYTHON = "/nonexistent/cardrunner-e2e/bin/python";
const FAKE_SERVER = path.resolve(import.meta.dirname, "../../../client-vscode/test/fake_lsp_server.py");
const recordFile = path.join(opt.artifacts, "logs", "fake-lsp-commands.jsonl");
const tmp = mkdtempSync(path.join(tmpdir(), "cardrunner-vscode-e2e-"));
const ws = path.join(tmp, "workspace");
const logDir = path.join(opt.artifacts, "logs");
rmSync(opt.artifacts, { recursive: true, force: true });
mkdirSync(logDir, { recursive: true });

// --server path: `cardrunner` where pipx and `pip install --user` put it, ~/.local/bin, which the
// user's login profile puts on PATH. The extension host takes its PATH from the user's login shell
// (as VS Code does), not from the process that started code-server — on Debian /etc/profile resets
// PATH — so a folder added to code-server's own PATH never reaches the extension.
function userHomeWithCardrunner() {
  const home = path.join(tmp, "home");
  const bin = path.join(home, ".local", "bin");
  mkdirSync(bin, { recursive: true });
  symlinkSync(path.join(path.dirname(opt.python), "cardrunner"), path.join(bin, "cardrunner"));
  writeFileSync(
    path.join(home, ".profile"),
    "# as in a default ~/.profile: the user's own scripts on PATH\n" +
      'if [ -d "$HOME/.local/bin" ]; then PATH="$HOME/.local/bin:$PATH"; fi\n',
  );
  return home;
}

async function prepare() {
  const commands = {
    // The setting as one string, the way users write it in settings.json.
    real: `"${opt.python}" -m cardrunner lsp`,
    fake: [opt.python, FAKE_SERVER],
    missing: [MISSING_PYTHON, "-m", "cardrunner", "lsp"],
    // No setting at all: the server must be found as `cardrunner` on the extension host's PATH.
    path: undefined,
  };
  if (!(opt.server in commands)) {
    throw new Error(`--server must be real, fake, missing or path, not ${opt.server}`);
  }
  const serverCommand = commands[opt.server];
  createWorkspace(ws);
  const transcriptFile = path.join(tmp, "transcript.json");
  writeFileSync(transcriptFile, JSON.stringify(transcript(), null, 1));
  const userDataDir = path.join(tmp, "user-data");
  const extensionsDir = path.join(tmp, "extensions");
  mkdirSync(path.join(userDataDir, "User"), { recursive: true });
  const userSettings = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "extensions.ignoreRecommendations": true,
    "extensions.autoCheckUpdates": false,
    "telemetry.telemetryLevel": "off",
    "security.workspace.trust.enabled": false,
    "editor.codeLens": true,
    "chat.disableAIFeatures": true,
  };
  writeFileSync(path.join(userDataDir, "User", "settings.json"), JSON.stringify(userSettings, null, 2));
  // Machine-scoped (a workspace cannot choose the program that runs, nor loosen a limit): the
  // settings of the machine the extension runs on, code-server's Remote settings (Machine/). VS
  // Code ignores machine-scoped settings in a remote window's user settings: it read them once
  // at start, then dropped them on the first settings change.
  const machineSettings = {
    ...(serverCommand === undefined ? {} : { "cardrunner.server.command": serverCommand }),
    "cardrunner.limits.maxRounds": 12,
  };
  mkdirSync(path.join(userDataDir, "Machine"), { recursive: true });
  writeFileSync(path.join(userDataDir, "Machine", "settings.json"), JSON.stringify(machineSettings, null, 2));
  const nodeBin = path.dirname(opt.node);
  const env = {
    ...process.env,
    PATH: `${nodeBin}:${process.env.PATH}`,
    XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
    XDG_DATA_HOME: path.join(tmp, "xdg-data"),
    CARDRUNNER_FAKE_LSP_RECORD: recordFile,
    ...(opt.server === "path" ? { HOME: userHomeWithCardrunner() } : {}),
  };
  step(`installing ${opt.vsix}`);
  await run(
    opt["code-server"],
    ["--user-data-dir", userDataDir, "--extensions-dir", extensionsDir, "--install-extension", opt.vsix],
    { env },
  );
  return { transcriptFile, userDataDir, extensionsDir, env };
}

async function startServices({ transcriptFile, userDataDir, extensionsDir, env }) {
  const violationsFile = path.join(logDir, "fake-api-violations.json");
  const requestsFile = path.join(logDir, "fake-api-requests.jsonl");
  const api = await startFakeApi({ python: opt.python, transcriptFile, violationsFile, requestsFile, logDir });
  step(`fake Messages API at ${api.url}`);
  const port = await freePort();
  const serverEnv = { ...env, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: "sk-test" };
  await startCodeServer({
    codeServer: opt["code-server"],
    port,
    workspace: ws,
    userDataDir,
    extensionsDir,
    env: serverEnv,
    logDir,
  });
  step(`code-server on port ${port}`);
  return { port, violationsFile };
}

/** The concatenated text of every file called `name` below `dir` (the extension's log files). */
function readLogs(dir, name) {
  if (!existsSync(dir)) {
    return "";
  }
  return readdirSync(dir, { recursive: true })
    .filter((rel) => path.basename(String(rel)) === name)
    .map((rel) => readFileSync(path.join(dir, String(rel)), "utf-8"))
    .join("\n");
}

/** The extension activated and started (or tried to start) the language server. */
async function activation(wb) {
  const outcome = await waitFor(
    "the ▶ Run card lens or a cardrunner notification",
    async () => {
      if (await wb.lens("Run card").isVisible()) {
        return "lens";
      }
      return (await wb.notification(/cardrunner/).isVisible()) ? "notification" : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  step(`extension active: ${outcome} appeared`);
  await wb.shot(outcome === "lens" ? "run-card-lens" : "server-notification");
  await wb.runCommand("cardrunner: Show output");
  const started = await waitFor("the cardrunner log to show the server start", () =>
    /starting the server: .*/.exec(readLogs(path.join(tmp, "user-data", "logs"), "cardrunner.log")),
  );
  step(`extension log: ${started[0]}`);
  await wb.shot("output-channel");
  return outcome;
}

const DROPPED = "src/NOTES.md";
const CARD_STATE = / → (Done|Failed)( \(\w+\))?$/;
const DROP_REASON = "scratch notes are not part of the card";

/**
 * One review, from the notification to the decision: "accept" keeps every file, "drop" (stand-in
 * server) unpicks its extra file and gives a reason, "reject" rejects with REJECT_REASON.
 */
async function review(wb, decision, nth = 1) {
  const toast = wb.notification(/waits for review/);
  await waitFor(
    `review ${nth} to be requested`,
    () =>
      (readLogs(path.join(tmp, "user-data", "logs"), "cardrunner.log").match(/review requested for/g) ?? []).length >=
      nth,
    { timeoutMs: 120_000 },
  );
  await wb.shot(`review-notification-${decision}`);
  if (nth === 1) {
    // Negotiated at initialize: the server sends the notification alone, no question, no .diff tab.
    const questions = (await wb.notifications()).filter((m) => /cardrunner: review '/.test(m));
    const diffTabs = await wb.page
      .locator(".tabs-container .tab")
      .filter({ hasText: /\.diff\b/ })
      .count();
    if (questions.length > 0 || diffTabs > 0) {
      throw new Error(
        `the server's generic review UI reached VS Code: ${questions.join(" | ")} (${diffTabs} .diff tabs)`,
      );
    }
  }
  if (await toast.isVisible()) {
    await wb.clickNotificationButton(toast, "Review");
  } else {
    // The toast may be gone (Escape, another review); the review waits in the view, the board
    // and the palette until it is handled.
    await wb.runCommand("cardrunner: Review changes");
  }
  await wb.page.locator(".monaco-diff-editor").first().waitFor({ timeout: 30_000 });
  // The files, criteria and decisions in the side bar beside the diff, not over it.
  const list = await wb.reviewList();
  await noRenameBadge(wb);
  const rows = await wb.reviewRows(list);
  step(`review list: ${rows.join(" | ")}`);
  if (!rows.some((r) => /^greet\.py .*\bsrc\b/.test(r)) || rows.some((r) => r.includes(".cardrunner/"))) {
    throw new Error(`the review list should name src/greet.py by its place in the repository: ${rows.join(" | ")}`);
  }
  if (opt.server === "real" && !rows.some((r) => /^greet\.py \d+ hunks? \+[1-9]\d* −\d+ · src$/.test(r))) {
    throw new Error(`the review list should count greet.py's hunks and lines from the .diff: ${rows.join(" | ")}`);
  }
  if (await wb.page.locator(".quick-input-widget").isVisible()) {
    throw new Error("a QuickPick covers the review's diff");
  }
  await wb.shot(`review-diff-and-files-${decision}`);
  if (decision === "accept") {
    // A second Review (the palette, a lens, the board) brings the open review forward: no copy.
    await wb.runCommand("cardrunner: Review changes");
    await wb.reviewList();
    const diffs = await reviewTabs(wb).filter({ hasText: "Review: " }).count();
    if (diffs !== 1) {
      throw new Error(`a second Review should bring the open review forward, not open a copy: ${diffs} diff tabs`);
    }
    step("a second Review brought the open review forward (one diff tab)");
  }
  if (decision === "drop") {
    const notes = list.locator(".monaco-list-row").filter({ hasText: "NOTES.md" }).first();
    await notes.locator(".custom-view-tree-node-item-checkbox").click();
    await waitFor(`${DROPPED} unticked`, async () => /Files 1 of 2 kept/.test((await wb.reviewRows(list)).join(" | ")));
    await wb.shot("review-file-dropped");
  }
  if (decision === "reject") {
    await commentAndReject(wb, list, step);
  } else {
    await wb.clickReviewRow(list, "Accept & commit");
  }
  if (decision === "drop") {
    const why = await wb.quickInput(/Why leave these files out/);
    await why.locator("input").fill(DROP_REASON);
    await wb.page.keyboard.press("Enter");
  }
  await toast.waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
  await waitFor(`no review tab left after ${decision}`, async () => (await reviewTabs(wb).count()) === 0, {
    timeoutMs: 30_000,
  });
  step(`review decided: ${decision}; its editors closed`);
}

/** The review's editors: the multi-file diff ("Review: …" plus VS Code's " (2 files)") and the
 * per-file diffs opened from the list. */
function reviewTabs(wb) {
  return wb.page.locator(".tabs-container .tab").filter({ hasText: /Review: |before ↔ after|new file/ });
}

/** Each reviewed file is a modification of itself: no rename badge, no name struck through. */
async function noRenameBadge(wb) {
  const entries = wb.page.locator(".multiDiffEntry");
  await entries.first().waitFor({ timeout: 30_000 });
  const badges = (await wb.page.locator(".multiDiffEntry .status").allInnerTexts()).filter((t) => t.trim() !== "");
  const renamed = await wb.page.locator(".multiDiffEntry .status.renamed").count();
  const struck = await wb.page.locator(".multiDiffEntry .strikethrough").count();
  if (renamed > 0 || struck > 0 || badges.length > 0) {
    throw new Error(`the review shows a file as renamed: badges ${JSON.stringify(badges)}, ${struck} struck through`);
  }
}

/** The rejection reason went back to the model as the result of its git_commit call. */
function checkRejectionReachedModel(requestsFile) {
  const bodies = readFileSync(requestsFile, "utf-8")
    .split("\n")
    .filter((l) => l)
    .map((l) => JSON.parse(l).body);
  const results = bodies.flatMap((b) =>
    (b?.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : [])),
  );
  const carried = results.some(
    (block) => block.type === "tool_result" && JSON.stringify(block.content).includes(REJECT_REASON),
  );
  if (!carried) {
    throw new Error("no tool_result sent to the model carries the rejection reason");
  }
  const commented = results.some(
    (block) =>
      block.type === "tool_result" &&
      JSON.stringify(block.content).includes(LINE_COMMENT) &&
      JSON.stringify(block.content).includes("src/greet.py:3"),
  );
  if (!commented) {
    throw new Error("no tool_result sent to the model carries the line comment with its file and line");
  }
  step("the rejection reason and the line comment reached the model as git_commit's result");
}

/** The commands the fake server received, in order. */
function recorded() {
  return existsSync(recordFile)
    ? readFileSync(recordFile, "utf-8")
        .split("\n")
        .filter((l) => l)
        .map((l) => JSON.parse(l))
    : [];
}

/** What only the fake server can show: the exact arguments the client sent. */
function checkFakeServerCalls(cardUri) {
  const calls = recorded();
  const init = calls.find((c) => c.command === "initialize");
  // sk-test from the environment; the client asks for the optional notifications and says it
  // shows reviews itself
  const own = { notifications: true, nativeReview: true };
  const expectedInit = JSON.stringify([{ limits: { max_rounds: 12 }, client: own }, "test"]);
  if (JSON.stringify(init?.arguments) !== expectedInit) {
    throw new Error(`initializationOptions: expected ${expectedInit}, got ${JSON.stringify(init?.arguments)}`);
  }
  // Negotiated, not undone: the stand-in server, told so, sends neither its .diff nor its question.
  const generic = calls.filter((c) => ["window/showDocument", "window/showMessageRequest"].includes(c.command));
  if (generic.length > 0) {
    throw new Error(`no generic review UI for a client that shows reviews itself, got ${JSON.stringify(generic)}`);
  }
  const accept = calls.find((c) => c.command === "cardrunner.acceptChanges");
  const expected = JSON.stringify([cardUri, { drop: [DROPPED], reason: DROP_REASON }]);
  if (JSON.stringify(accept?.arguments) !== expected) {
    throw new Error(`acceptChanges: expected ${expected}, got ${JSON.stringify(accept?.arguments)}`);
  }
  step(`server received ${calls.map((c) => c.command).join(", ")}`);
}

/** A server that cannot start: the error names the command, what went wrong and the fix. */
async function startFailure(wb) {
  const toast = wb.notification(/did not start/);
  await toast.waitFor({ timeout: 60_000 });
  const message = await wb.notificationMessage(toast);
  step(`error: ${message}`);
  for (const part of [MISSING_PYTHON, "the command was not found", "cardrunner.server.command"]) {
    if (!message.includes(part)) {
      throw new Error(`the start error should mention "${part}": ${message}`);
    }
  }
  if ((await toast.locator(".monaco-button", { hasText: "Open Settings" }).count()) !== 1) {
    throw new Error("the start error should offer Open Settings");
  }
  await wb.shot("server-start-error");
}

/** A setting change is pushed in the server's shape; a server.* change restarts the server. */
async function settingsChanges() {
  const file = path.join(tmp, "user-data", "Machine", "settings.json");
  const settings = JSON.parse(readFileSync(file, "utf-8"));
  writeFileSync(file, JSON.stringify({ ...settings, "cardrunner.limits.maxCostUsd": 0.5 }, null, 2));
  const pushed = JSON.stringify([{ cardrunner: { limits: { max_rounds: 12, max_cost_usd: 0.5 } } }]);
  await waitFor(`workspace/didChangeConfiguration with ${pushed}`, () =>
    recorded().some((c) => c.command === "workspace/didChangeConfiguration" && JSON.stringify(c.arguments) === pushed),
  );
  step("settings change pushed in the server's shape");
  const command = [...settings["cardrunner.server.command"], "--restarted"];
  writeFileSync(file, JSON.stringify({ ...settings, "cardrunner.server.command": command }, null, 2));
  await waitFor(
    "the server to restart after cardrunner.server.command changed",
    () => recorded().filter((c) => c.command === "initialize").length === 2,
  );
  step("server restarted after cardrunner.server.command changed");
}

/** "Set API key": stored in SecretStorage, passed to a restarted server, never logged. */
async function apiKey(wb) {
  const key = "sk-e2e-secret-7f3a";
  await wb.runCommand("cardrunner: Set API key");
  const box = await wb.quickInput(/Anthropic API key/);
  await box.locator("input").fill(key);
  await wb.page.keyboard.press("Enter");
  await waitFor("a server started with the stored key", () =>
    recorded().some((c) => c.command === "initialize" && c.arguments[1] === "7f3a"),
  );
  const logs = readLogs(path.join(tmp, "user-data", "logs"), "cardrunner.log");
  if (logs.includes(key) || readFileSync(recordFile, "utf-8").includes(key)) {
    throw new Error("the API key was written to a log");
  }
  step("API key from SecretStorage reached the restarted server and no log");
}

/** ■ Cancel on a run whose model call hangs: the run ends failed (cancelled) at once. */
async function cancelRun(wb) {
  await wb.openFile(CANCEL_CARD_PATH);
  const run = wb.lens("Run card");
  await run.waitFor({ timeout: 60_000 });
  await run.click();
  const cancel = wb.lens("Cancel");
  await cancel.waitFor({ timeout: 60_000 });
  await wb.shot("cancel-lens");
  await cancel.click();
  step("clicked ■ Cancel");
  const ended = wb.notification(/failed: cancelled/);
  await ended.waitFor({ timeout: 60_000 });
  step(`notification: ${await wb.notificationMessage(ended)}`);
  await waitFor("the cancelled card to show state: Failed", async () =>
    /state: Failed/.test(await wb.activeEditorText()),
  );
  await waitFor("the lenses to offer Resume", () => wb.lens("Resume").isVisible(), { timeoutMs: 30_000 });
  await wb.shot("card-cancelled");
}

async function fullRun(wb, violationsFile) {
  if (opt.server === "fake") {
    await wb.lens("Run card").click(); // the stand-in server has no board
    step("clicked ▶ Run card");
  } else {
    await runFromBoard(wb, ws, step);
  }
  const status = wb.statusItem(/\d+ cards? · (round \d+|baseline check)|to review/);
  await status.waitFor({ timeout: 60_000 });
  step(`status bar: ${(await status.textContent())?.trim()}`);
  await wb.shot("status-bar-running");

  if (opt.server === "fake") {
    await review(wb, "drop");
  } else {
    await liveRunView(wb, step);
    await waitingForReview(wb, step);
    await criterionTicked(wb, step);
    await review(wb, "reject", 1);
    await review(wb, "accept", 2);
    checkRejectionReachedModel(path.join(logDir, "fake-api-requests.jsonl"));
  }

  // The run's commit; the card's new state follows it in a commit of its own (`card: … → Done`).
  const runCommit = () => commits(ws).find((c, i, all) => i < all.length - 1 && !CARD_STATE.test(c.subject));
  const done = await waitFor("a commit by the run", runCommit, { timeoutMs: 120_000 });
  step(`commit ${done.sha.slice(0, 8)} "${done.subject}": ${changedFiles(ws, done.sha).join(", ")}`);
  if (gitShow(ws, done.sha, "src/greet.py").trim() !== SOURCE_AFTER.trim()) {
    throw new Error("the commit does not hold the model's change to src/greet.py");
  }
  if (opt.server === "real" && !commitMessage(ws, done.sha).includes("test_greet checks it")) {
    throw new Error(`the commit should carry the message written after the rejection: ${commitMessage(ws, done.sha)}`);
  }
  if (changedFiles(ws, done.sha).includes(DROPPED)) {
    throw new Error(`${DROPPED} was dropped in the review but is in the commit`);
  }
  const ended = wb.notification(/: done/);
  await ended.waitFor({ timeout: 60_000 });
  step(`notification: ${await wb.notificationMessage(ended)}`);
  await wb.shot("done-notification");
  await wb.runCommand("View: Close All Editors"); // the run view opens again, from the run's log
  await wb.clickNotificationButton(ended, "Show log");
  const runTab = wb.page.locator(".tabs-container .tab.active").filter({ hasText: /Run: / });
  await runTab.waitFor({ timeout: 30_000 });
  const view = await wb.webviewFrame("#run");
  if (opt.server === "real") {
    await view.locator(".result", { hasText: "Done" }).waitFor({ timeout: 30_000 });
    await view.locator(".narration", { hasText: NARRATION }).waitFor({ timeout: 10_000 });
    await view.locator('li[data-status="verified"]').waitFor({ timeout: 10_000 });
  }
  step(`"Show log" opened the run view ${(await runTab.textContent())?.trim()}`);
  await wb.shot("run-summary");
  if (opt.server === "real") {
    await view.locator("button", { hasText: "Open raw log" }).click();
    const logTab = wb.page.locator(".tabs-container .tab.active").filter({ hasText: /\.jsonl/ });
    await logTab.waitFor({ timeout: 30_000 });
    step(`one click more opened ${(await logTab.textContent())?.trim()}`);
    await wb.shot("run-log");
  }
  if ((await reviewTabs(wb).count()) !== 0) {
    throw new Error("a review tab is left after the decision");
  }
  await wb.openFile(CARD_PATH);
  await waitFor("the card to show state: Done", async () => /state: Done/.test(await wb.activeEditorText()), {
    timeoutMs: 60_000,
  });
  await wb.shot("card-done");
  if (opt.server === "real" && !/ → Done$/.test(commits(ws)[0].subject)) {
    throw new Error(`the card's new state was not committed after the run: ${commits(ws)[0].subject}`);
  }
  if (opt.server === "real") {
    await problemsPanel(wb, step);
  }
  if (
    (await wb.page
      .locator(".tabs-container .tab")
      .filter({ hasText: /\.diff$/ })
      .count()) > 0
  ) {
    throw new Error("the server's .diff document was opened next to the native diff editors");
  }
  if (opt.server === "fake") {
    checkFakeServerCalls(pathToFileURL(path.join(ws, CARD_PATH)).href);
    await settingsChanges();
    await apiKey(wb);
  } else {
    await cancelRun(wb);
  }
  const violations = JSON.parse(readFileSync(violationsFile, "utf-8"));
  if (violations.length > 0) {
    throw new Error(`the fake API recorded invalid requests: ${JSON.stringify(violations).slice(0, 800)}`);
  }
}

async function main() {
  const prepared = await prepare();
  const { port, violationsFile } = await startServices(prepared);
  const browser = await launchBrowser({ playwrightDir: opt.playwright, chromium: opt.chromium });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const wb = new Workbench(page, opt.artifacts, opt.images);
  try {
    await wb.open(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await wb.shot("workbench");
    await wb.openFile(CARD_PATH);
    await wb.shot("card-open");
    const outcome = await activation(wb);
    if (opt.server === "path") {
      if (outcome !== "lens") {
        throw new Error(`the server on PATH did not start: ${(await wb.notifications()).join(" | ")}`);
      }
      const log = readLogs(path.join(tmp, "user-data", "logs"), "cardrunner.log");
      if (!/starting the server: .*\(cardrunner on PATH\)/.test(log)) {
        throw new Error("the extension started the server, but not the one on PATH");
      }
      step("the server was found on PATH with no setting");
    }
    if (opt.until === "activation" || opt.server === "path") {
      return;
    }
    if (opt.server === "missing") {
      await startFailure(wb);
      return;
    }
    if (outcome !== "lens") {
      throw new Error(`the server did not show the Run card lens: ${(await wb.notifications()).join(" | ")}`);
    }
    await wb.page.keyboard.press("Escape");
    await fullRun(wb, violationsFile);
  } catch (err) {
    await wb.shot("failure").catch(() => undefined);
    writeFileSync(path.join(logDir, "page.html"), await page.content().catch(() => ""));
    console.error(`status bar: ${await wb.statusBarText().catch(() => "?")}`);
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
  console.error(`[e2e ${elapsed()}] FAILED: ${err.stack ?? err}`);
} finally {
  await stopAll();
  const userLogs = path.join(tmp, "user-data", "logs");
  if (existsSync(userLogs)) {
    cpSync(userLogs, path.join(logDir, "vscode"), { recursive: true });
  }
  if (opt.keep) {
    console.log(`kept ${tmp}`);
  } else {
    rmSync(tmp, { recursive: true, force: true });
  }
}
console.log(`[e2e ${elapsed()}] artifacts: ${opt.artifacts}`);
console.log(`[e2e] server ${opt.server}, until ${opt.until}: ${failed ? "FAILED" : "passed"}`);
console.log(`vscode-e2e-${opt.server}: ${failed ? "0 passed, 1 failed" : "1 passed, 0 failed"}`);
process.exit(failed ? 1 : 0);
