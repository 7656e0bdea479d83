// Driving VS Code (code-server) in Chromium through playwright-core, as a user would.
//
// Why selectors and not VS Code's test API: the point is to see what a user sees — a lens to
// click, a status bar, a notification with buttons, diff editors, a tree view, a QuickPick. Selectors are
// the ones of VS Code 1.139's workbench; each wait has a timeout and every step leaves a
// screenshot in the artifacts folder.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import * as path from "node:path";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launchBrowser({ playwrightDir, chromium }) {
  const require = createRequire(import.meta.url);
  const { chromium: browserType } = require(playwrightDir);
  return browserType.launch({ executablePath: chromium, headless: true, args: CHROMIUM_ARGS });
}

/** Poll `check` until true; throw naming `what` after `timeoutMs`. */
async function waitUntil(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const normalise = (text) => (text ?? "").replace(/\u00a0/g, " ");

export class Workbench {
  constructor(page, artifacts, images) {
    this.page = page;
    this.artifacts = artifacts;
    this.images = images;
    this.shots = 0;
    mkdirSync(artifacts, { recursive: true });
  }

  /** Save a numbered screenshot; returns its path. */
  async shot(name) {
    this.shots += 1;
    const file = path.join(this.artifacts, `${String(this.shots).padStart(2, "0")}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** A picture for the documentation (docs/images/<name>.png), when asked for (`--images`). */
  async image(name) {
    if (this.images) {
      mkdirSync(this.images, { recursive: true });
      // Transitions finished: a QuickPick still fading in would show through the editor.
      await this.page.screenshot({ path: path.join(this.images, `${name}.png`), animations: "disabled" });
    }
  }

  async open(url) {
    await this.page.goto(url);
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await this.page.locator(".statusbar").waitFor({ timeout: 60_000 });
  }

  /**
   * Open a workspace file by its relative path through the Explorer: unfold each folder, click
   * the file, wait for its tab. Not Quick Open (Ctrl+P): under load its file search answered
   * after the wait, and a key pressed while the workbench was busy was lost; a tree row is there
   * or not, and each wait is on what the row shows (`aria-expanded`, the active tab).
   */
  async openFile(rel) {
    await this.runCommand("View: Show Explorer");
    const tree = this.page.locator(".explorer-folders-view");
    await tree.waitFor({ timeout: 30_000 });
    const parts = rel.split("/");
    for (const [i, name] of parts.entries()) {
      const exact = new RegExp(`^\\s*${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`);
      const row = tree.locator(".monaco-list-row").filter({ hasText: exact }).first();
      await row.waitFor({ timeout: 30_000 });
      if (i === parts.length - 1) {
        await row.click();
      } else if ((await row.getAttribute("aria-expanded")) !== "true") {
        await row.click();
        await waitUntil(async () => (await row.getAttribute("aria-expanded")) === "true", `${name}/ unfolded`);
      }
    }
    const tab = this.page.locator(".tabs-container .tab.active").filter({ hasText: path.basename(rel) });
    await tab.waitFor({ timeout: 30_000 });
  }

  /**
   * The frame of the webview whose page has `selector` (the board's `#board`, the run view's
   * `#run`): webviews are nested iframes that look alike from outside, so each is told by its
   * content; waits until one is there.
   */
  async webviewFrame(selector, timeoutMs = 60_000) {
    let found;
    await waitUntil(
      async () => {
        for (const frame of this.page.frames()) {
          if (
            !frame.isDetached() &&
            (await frame
              .locator(selector)
              .count()
              .catch(() => 0)) > 0
          ) {
            found = frame;
            return true;
          }
        }
        return false;
      },
      `a webview with ${selector}`,
      timeoutMs,
    );
    return found;
  }

  /**
   * Run a command from the palette by its title, e.g. "cardrunner: Show output". Each try opens
   * the palette, types the title and clicks its row; a palette that closes on the way (a panel or
   * editor that opened just before takes the focus, a key lost while the workbench was busy) is
   * opened again, up to three tries.
   */
  async runCommand(title) {
    const input = this.page.locator(".quick-input-widget input");
    const row = this.page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: title }).first();
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.page.keyboard.press(attempt === 1 ? "Control+Shift+P" : "F1");
        await input.waitFor({ state: "visible", timeout: 10_000 });
        await input.fill(`>${title}`, { timeout: 5_000 });
        await row.click({ timeout: 15_000 });
        return;
      } catch (err) {
        if (attempt === 3) {
          throw err;
        }
        if (await input.isVisible()) {
          await this.page.keyboard.press("Escape");
        }
      }
    }
  }

  /**
   * Close an editor VS Code shows over the workbench with the focus (Settings, Workspace Trust):
   * Escape, up to three times (a first one may only clear a search box).
   */
  async closeOverlay(selector) {
    const overlay = this.page.locator(selector);
    for (let i = 0; i < 3 && (await overlay.isVisible()); i += 1) {
      await this.page.keyboard.press("Escape");
      await overlay.waitFor({ state: "hidden", timeout: 3_000 }).catch(() => undefined);
    }
  }

  /** The text of the active editor tab's label. */
  async activeTabLabel() {
    return normalise(await this.page.locator(".tabs-container .tab.active").first().textContent());
  }

  lens(text) {
    return this.page.locator(".codelens-decoration a").filter({ hasText: text }).first();
  }

  /** The status bar item whose text matches `pattern`. */
  statusItem(pattern) {
    return this.page.locator(".statusbar-item").filter({ hasText: pattern }).first();
  }

  notification(pattern) {
    return this.page.locator(".notification-toast").filter({ hasText: pattern }).first();
  }

  /** The message of a notification toast (without its source and buttons). */
  async notificationMessage(toast) {
    return normalise(await toast.locator(".notification-list-item-message").first().textContent());
  }

  async clickNotificationButton(toast, label) {
    await toast.locator(".monaco-button", { hasText: label }).first().click();
  }

  /** Wait for a QuickPick whose title or placeholder matches, and return its widget. */
  async quickInput(pattern, timeoutMs = 30_000) {
    const widget = this.page.locator(".quick-input-widget").filter({ hasText: pattern });
    await widget.first().waitFor({ state: "visible", timeout: timeoutMs });
    return widget.first();
  }

  async pickQuickItem(widget, label) {
    await widget.locator(".monaco-list-row").filter({ hasText: label }).first().click();
  }

  /**
   * The review list beside the diff (the Review view in cardrunner's side bar), once it shows
   * the review: its rows are the decisions, the files and the criteria.
   */
  async reviewList(timeoutMs = 30_000) {
    const pane = this.page.locator(".pane").filter({ has: this.page.locator(".pane-header", { hasText: /Review/ }) });
    const list = pane.first();
    await list.locator(".monaco-list-row", { hasText: "Accept & commit" }).first().waitFor({ timeout: timeoutMs });
    return list;
  }

  /** The rows of the review list, as shown (label and description). */
  async reviewRows(list) {
    const rows = await list.locator(".monaco-list-row").evaluateAll((els) =>
      els.map((row) =>
        [...row.querySelectorAll(".label-name, .label-description")]
          .map((part) => (part.textContent ?? "").trim())
          .filter((text) => text !== "")
          .join(" "),
      ),
    );
    return rows.map((t) => normalise(t).replace(/\s+/g, " ").trim());
  }

  async clickReviewRow(list, label) {
    await list.locator(".monaco-list-row").filter({ hasText: label }).first().click();
  }

  /**
   * How many characters of code a line of the diff shows: the modified side's width over one
   * character's (measured on the longest line drawn). The review once cut code at ~25.
   */
  async diffColumns() {
    return this.page.evaluate(() => {
      const editor =
        document.querySelector(".monaco-diff-editor .editor.modified") ??
        document.querySelector(".monaco-diff-editor .monaco-editor");
      const scroll = editor?.querySelector(".lines-content")?.parentElement;
      const spans = [...(editor?.querySelectorAll(".view-line > span") ?? [])].filter(
        (s) => (s.textContent ?? "").trim().length > 8,
      );
      if (!scroll || spans.length === 0) {
        return 0;
      }
      const longest = spans.reduce((a, b) => ((b.textContent ?? "").length > (a.textContent ?? "").length ? b : a));
      const perChar = longest.getBoundingClientRect().width / (longest.textContent ?? "x").length;
      return Math.floor(scroll.getBoundingClientRect().width / perChar);
    });
  }

  /** The visible text of the active (non-diff) editor. */
  async activeEditorText() {
    const lines = this.page
      .locator(".editor-group-container.active .editor-instance .monaco-editor .view-lines")
      .first();
    return normalise(await lines.innerText());
  }

  /** Every notification toast's text (for failure reports). */
  async notifications() {
    return (await this.page.locator(".notification-toast .notification-list-item-message").allTextContents()).map(
      normalise,
    );
  }

  async statusBarText() {
    return normalise(await this.page.locator(".statusbar").innerText());
  }
}
