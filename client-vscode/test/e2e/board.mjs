// The end-to-end steps of the board and the review worth doing: run a card from the board and see
// it move, read the live run view while tests run, see the waiting review in the Cards view and the
// board, reject from the review's .diff with a line comment, and a Problems panel without
// successes. run.mjs calls them in the user's order; `step` is its progress log.
import { waitFor } from "./processes.mjs";
import { CARD_TITLE, LINE_COMMENT, NARRATION, REJECT_REASON } from "./workspace.mjs";

/**
 * Reject from the review's .diff: a `#` comment typed under the changed line, then the
 * "✗ Reject with 1 comment(s)" lens, which asks for a reason; both reach the model.
 */
export async function commentAndReject(wb, list, step) {
  await wb.clickReviewRow(list, "Drop single hunks, comment lines");
  await waitFor("the review's .diff", async () => /\.diff/.test(await wb.activeTabLabel()), { timeoutMs: 30_000 });
  await wb.lens("Accept & commit").waitFor({ timeout: 60_000 }); // the server offers the review here
  await waitFor("a hunk lens", () => wb.lens("Drop hunk 1 of src/greet.py").isVisible(), { timeoutMs: 30_000 });
  const changed = wb.page
    .locator(".editor-group-container.active .editor-instance .view-line")
    .filter({ hasText: 'return f"Hello, {name}!"' })
    .first();
  await changed.click();
  await wb.page.keyboard.press("End");
  await wb.page.keyboard.press("Enter");
  await wb.page.keyboard.press("Shift+Home"); // whatever the editor indented, the comment starts the line
  await wb.page.keyboard.type(`# ${LINE_COMMENT}`);
  const reject = wb.lens("Reject with 1 comment");
  await reject.waitFor({ timeout: 30_000 });
  await wb.shot("review-diff-line-comment");
  await reject.click();
  const why = await wb.quickInput(/Reject the changes/);
  await why.locator("input").fill(REJECT_REASON);
  await wb.shot("review-reject-reason");
  await wb.page.keyboard.press("Enter");
  await why.waitFor({ state: "hidden", timeout: 10_000 });
  await wb.runCommand("View: Revert and Close Editor"); // the comment was for the model, not the file
  step("rejected from the .diff with a line comment and a reason");
}

/**
 * The trust question, as a user meets it on a repository's first run: a modal dialog (a toast
 * would hide itself while the run waits) that names the repository and lists what its config
 * asks for (here its build and test commands), with "Don't run" and "Trust and run"; the e2e
 * trusts. The run waits for the answer.
 */
export async function trustQuestion(wb, root, step) {
  const dialog = wb.page.locator(".monaco-dialog-box").filter({ hasText: /has not run in .* before/ });
  await dialog.waitFor({ timeout: 120_000 });
  const message = (await dialog.locator(".dialog-message-row").innerText()).replace(/\u00a0/g, " ");
  const expected = [
    root,
    "build command",
    "python -m compileall -q src",
    "test command",
    "python -m unittest discover",
  ];
  const missing = expected.filter((part) => !message.includes(part));
  if (missing.length > 0) {
    throw new Error(`the trust question should name ${missing.join(", ")}: ${message}`);
  }
  const buttons = (await dialog.locator(".dialog-buttons .monaco-button").allInnerTexts()).map((t) => t.trim());
  if (JSON.stringify([...buttons].sort()) !== JSON.stringify(["Don't run", "Trust and run"])) {
    throw new Error(`the trust question should offer exactly "Don't run" and "Trust and run": ${buttons.join(", ")}`);
  }
  await wb.shot("trust-question");
  await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Trust and run" }).click();
  await dialog.waitFor({ state: "detached", timeout: 30_000 });
  step(`trust question answered "Trust and run": ${message.replace(/\s+/g, " ").slice(0, 200)}…`);
}

/** The run's board card moves from New to In Work (run from the board) and then to Review. */
export async function runFromBoard(wb, root, step) {
  await wb.runCommand("cardrunner: Open board");
  const board = await wb.webviewFrame("#board");
  const card = (state) => board.locator(`section[data-state="${state}"] article`).filter({ hasText: CARD_TITLE });
  await card("New").waitFor({ timeout: 60_000 });
  await wb.shot("board-new");
  await card("New").locator("button", { hasText: "Run card" }).click();
  step("clicked ▶ Run card on the board");
  await trustQuestion(wb, root, step);
  await card("In Work").waitFor({ timeout: 60_000 });
  step(`board: In Work · ${(await card("In Work").locator(".detail").textContent())?.trim()}`);
  await wb.shot("board-in-work");
}

/**
 * The run view while the tests run: the model's narration of round 1, the test output streaming
 * into the running call while the slow test still runs, the criterion not ticked yet — and no
 * Problems entry for a run that is simply in progress.
 */
export async function liveRunView(wb, step) {
  await wb.runCommand("cardrunner: Show run");
  // The run's worker starts first (its log appears with it): slow on a loaded machine.
  const view = await wb.webviewFrame("#run header", 180_000);
  await view.locator(".narration", { hasText: NARRATION }).waitFor({ timeout: 120_000 });
  const running = view.locator("section.round.now pre");
  const text = await waitFor(
    "the first test result in the run view while the tests run",
    async () => {
      const shown = (await running.textContent({ timeout: 1_000 }).catch(() => "")) ?? "";
      return /test_greets_with_comma_and_exclamation_mark .*\.\.\. ok/.test(shown) ? shown : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  if (/test_start_page_greets_everyone .*\.\.\. ok/.test(text)) {
    throw new Error("the run view showed the test output only after the slow test had ended");
  }
  if ((await view.locator('li[data-status="pending"]').count()) !== 1) {
    throw new Error("the criterion should be pending while the tests run");
  }
  await wb.shot("run-view-live");
  step("run view: narration, and the first test passed while the slow one still ran");
  await noProblemsWhileRunning(wb, step);
}

/** A run in progress puts nothing in the Problems panel (pending criteria are its progress). */
async function noProblemsWhileRunning(wb, step) {
  await wb.page.keyboard.press("Control+Shift+M");
  const panel = wb.page.locator(".markers-panel").first();
  await panel.waitFor({ timeout: 15_000 });
  const rows = await panel.locator(".monaco-list-row").allInnerTexts();
  const ours = rows.filter((row) => /cardrunner|criterion|pending/i.test(row));
  await wb.shot("problems-during-run");
  if (ours.length > 0) {
    throw new Error(`the Problems panel lists a run in progress: ${ours.join(" | ").slice(0, 400)}`);
  }
  await wb.page.keyboard.press("Control+Shift+M"); // focused: the same key hides it again
  step(`Problems panel during the run: no cardrunner entry (${rows.length} rows in all)`);
}

/** The criterion ticks in the run view once its evidence is accepted (before the review). */
export async function criterionTicked(wb, step) {
  await wb.runCommand("cardrunner: Show run");
  const view = await wb.webviewFrame("#run header");
  await view.locator('li[data-status="verified"]').waitFor({ timeout: 60_000 });
  const calls = await view.locator("section.round details").count();
  await wb.shot("run-view-ticked");
  await wb.image("vscode-run-view");
  step(`run view: the criterion ticked, ${calls} tool calls listed`);
}

/** The Cards view and the board show the card waiting for review, with a badge. */
export async function waitingForReview(wb, step) {
  await wb.notification(/waits for review/).waitFor({ timeout: 120_000 });
  await wb.runCommand("View: Show cardrunner");
  const view = wb.page.locator(".pane").filter({ hasText: "Cards" }).first();
  await view.locator(".monaco-list-row").filter({ hasText: CARD_TITLE }).waitFor({ timeout: 30_000 });
  const row = view.locator(".monaco-list-row").filter({ hasText: CARD_TITLE }).first();
  if (!/waiting for review/.test((await row.textContent()) ?? "")) {
    throw new Error(`the Cards view should say the card waits for review: ${await row.textContent()}`);
  }
  const badge = wb.page.locator('.activitybar .badge[aria-label^="cardrunner"] .badge-content').first();
  await waitFor("the review badge", async () => (await badge.textContent().catch(() => ""))?.trim() === "1");
  await wb.shot("cards-view-review");
  await wb.runCommand("cardrunner: Open board");
  const board = await wb.webviewFrame("#board");
  await board
    .locator('section[data-state="Review"] article')
    .filter({ hasText: CARD_TITLE })
    .waitFor({ timeout: 30_000 });
  await wb.shot("board-review");
  step("Cards view and board: waiting for review, badge 1");
}

/** Verified criteria are hints: nothing of the card's good results in the Problems panel. */
export async function problemsPanel(wb, step) {
  await wb.page.keyboard.press("Control+Shift+M");
  const panel = wb.page.locator(".markers-panel").first();
  await panel.waitFor({ timeout: 15_000 });
  const text = await panel.innerText();
  if (/verified|done in \d+ rounds/.test(text)) {
    throw new Error(`the Problems panel lists successes: ${text.slice(0, 400)}`);
  }
  await wb.shot("problems-panel");
  step("Problems panel: no entry for verified criteria");
}
